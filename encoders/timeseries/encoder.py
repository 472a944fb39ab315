"""TimeSeriesEncoder: a multichannel series -> a VectorSet of one vector per time step.

Each time step's channel values, standardized by the training split's per-channel mean and
standard deviation, are projected to d_model and a 1-D positional encoding of the step's index
is added (sinusoidal: Vaswani et al. 2017, "Attention Is All You Need"), so attention knows the
order of the steps; padding steps are zero and masked.
"""

from __future__ import annotations

from typing import Literal

from torch import Tensor, nn

from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet
from vecset.encoders.contract import Encoder
from vecset.encoders.standardize import GlobalStandardization
from vecset.encoders.vector import Positional1D, make_positional_1d, max_positions

Normalization = Literal["global", "none"]


class TimeSeriesEncoder(GlobalStandardization, Encoder):
    """Time steps of ``in_dim`` channels -> vectors of width ``d_model``.

    Args:
        in_dim: channels per time step (linked from the data: its files' header).
        d_model: the width of the vectors (linked from the backbone).
        positional: ``sinusoidal`` (any length), ``learned`` (``max_len`` steps) or ``none``.
        normalization: ``global``: standardize each channel by the training split's statistics,
            fitted once at the start of fit (``DataSpec.train_inputs``) and kept in the
            checkpoint; ``none``: the values as read.
        dropout: on the projected vectors, in training.

    Shapes:
        batch["x"] (B, T, in_dim) float, batch["mask"] (B, T) bool -> VectorSet x (B, T, d_model), mask (B, T)
    """

    def __init__(self, in_dim: int, d_model: int, positional: Positional1D = "sinusoidal", max_len: int | None = None,
                 normalization: Normalization = "global", dropout: float = 0.0) -> None:
        super().__init__()
        if normalization not in ("global", "none"):
            raise ValueError(f"normalization must be 'global' or 'none', got {normalization!r}")
        self.in_dim, self.out_width, self.normalization = in_dim, d_model, normalization
        self._init_standardization(in_dim)
        self.proj = nn.Linear(in_dim, d_model)
        self.drop = nn.Dropout(dropout)
        self.positional = make_positional_1d(positional, d_model, max_len)

    @property
    def max_set_size(self) -> int | None:
        """A learned positional table's length (``contracts.abilities.MaxSetSize``)."""
        return max_positions(self.positional)

    def receive(self, spec: DataSpec) -> str | None:
        """``global``: fit the channel statistics on the training series at the start of fit
        (once: a model that has them, from a checkpoint, keeps them)."""
        if self.normalization == "global" and spec.fit and not self._stats_known:
            series = spec.inputs("TimeSeriesEncoder(normalization='global')")
            self.set_global_stats(series)
            return f"channel mean/std fitted on {len(series)} training series"
        return None

    def forward(self, batch: dict) -> VectorSet:
        x: Tensor = batch["x"]  # (B, T, C)
        mask: Tensor = batch["mask"]  # (B, T)
        if x.shape[-1] != self.in_dim:
            raise ValueError(f"TimeSeriesEncoder expects {self.in_dim} channels per time step, got {x.shape[-1]} "
                             "(in_dim follows the data's channel count: docs/timeseries.md)")
        if self.normalization == "global":
            x = self.standardize(x, "training series")
        m = mask[..., None].to(x.dtype)  # (B, T, 1)
        h = self.proj(x)  # (B, T, D)
        pe = self.positional(x.shape[1], x.device)  # (T, D) or None
        if pe is not None:
            h = h + pe
        h = self.drop(h) * m  # padding steps stay zero
        return VectorSet(x=h, mask=mask, padded=batch.get("padded"))
