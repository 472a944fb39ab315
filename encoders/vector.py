"""VectorEncoder: sets of plain feature vectors (already vectors) -> VectorSet."""

from __future__ import annotations

from typing import Literal

from torch import Tensor, nn

from vecset.backbone.positional import Learned1D, NoPositional, Sinusoidal1D
from vecset.contracts.vectorset import VectorSet
from vecset.encoders.contract import Encoder

Positional1D = Literal["none", "sinusoidal", "learned"]


def make_positional_1d(kind: Positional1D, d_model: int, max_len: int | None) -> nn.Module:
    if kind == "none":
        return NoPositional()
    if kind == "sinusoidal":
        return Sinusoidal1D(d_model)
    if kind == "learned":
        if not max_len:
            raise ValueError("positional='learned' needs max_len")
        return Learned1D(d_model, max_len)
    raise ValueError(f"positional must be 'none', 'sinusoidal' or 'learned', got {kind!r}")


def max_positions(positional: nn.Module) -> int | None:
    """The most positions a 1-D encoding takes: a learned table's ``max_len``; None: any."""
    return positional.max_len if isinstance(positional, Learned1D) else None


class VectorEncoder(Encoder):
    """Linear projection of each input vector to d_model, plus an optional 1-D positional
    encoding (by index in the set).

    Shapes:
        batch["x"] (B, N, in_dim) float, batch["mask"] (B, N) bool -> VectorSet (B, N, d_model)
    """

    def __init__(self, in_dim: int, d_model: int, positional: Positional1D = "none",
                 max_len: int | None = None) -> None:
        super().__init__()
        self.in_dim, self.out_width = in_dim, d_model
        self.proj = nn.Linear(in_dim, d_model)
        self.positional = make_positional_1d(positional, d_model, max_len)

    @property
    def max_set_size(self) -> int | None:
        """A learned positional table's length (``backbone.abilities.MaxSetSize``)."""
        return max_positions(self.positional)

    def forward(self, batch: dict) -> VectorSet:
        x: Tensor = batch["x"]
        if x.shape[-1] != self.in_dim:
            raise ValueError(f"VectorEncoder expects vectors of width in_dim={self.in_dim}, got {x.shape[-1]}")
        h = self.proj(x)
        pe = self.positional(x.shape[1], x.device)
        if pe is not None:
            h = h + pe
        mask = batch["mask"]
        return VectorSet(x=h * mask[..., None].to(h.dtype), mask=mask, padded=batch.get("padded"))


