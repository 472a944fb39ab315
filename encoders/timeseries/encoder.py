"""TimeSeriesEncoder: a multichannel series -> a VectorSet of one vector per time step.

Each time step's channel values, standardized by the training split's per-channel mean and
standard deviation, are projected to d_model and a 1-D positional encoding of the step's index
is added (sinusoidal: Vaswani et al. 2017, "Attention Is All You Need"), so attention knows the
order of the steps; padding steps are zero and masked.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet
from vecset.encoders.contract import Encoder
from vecset.encoders.vector import Positional1D, make_positional_1d, max_positions

Normalization = Literal["global", "none"]


class TimeSeriesEncoder(Encoder):
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
        self.register_buffer("mean", torch.zeros(in_dim))
        self.register_buffer("std", torch.ones(in_dim))
        self.register_buffer("stats_fitted", torch.tensor(False))
        self._stats_known = False  # stats_fitted on the host: forward must not read the buffer (a sync)
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
            self.set_stats(series)
            return f"channel mean/std fitted on {len(series)} training series"
        return None

    @torch.no_grad()
    def set_stats(self, series: list[Tensor]) -> None:
        """Fit the ``global`` normalization on a list of (T_i, in_dim) series."""
        x = torch.cat(series).double()  # (sum T, C)
        if x.shape[-1] != self.in_dim:
            raise ValueError(f"TimeSeriesEncoder(in_dim={self.in_dim}) got training series of {x.shape[-1]} channels")
        self.mean.copy_(x.mean(0).float())
        self.std.copy_(x.std(0).nan_to_num(1.0).clamp_min(1e-5).float())  # one step: no spread
        self.stats_fitted.fill_(True)
        self._stats_known = True

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        fitted = state_dict.get(prefix + "stats_fitted")
        self._stats_known = bool(fitted) if fitted is not None else self._stats_known  # at load, not per step

    def forward(self, batch: dict) -> VectorSet:
        x: Tensor = batch["x"]  # (B, T, C)
        mask: Tensor = batch["mask"]  # (B, T)
        if x.shape[-1] != self.in_dim:
            raise ValueError(f"TimeSeriesEncoder expects {self.in_dim} channels per time step, got {x.shape[-1]} "
                             "(in_dim follows the data's channel count: docs/timeseries.md)")
        if self.normalization == "global":
            if not self._stats_known:
                raise ValueError("TimeSeriesEncoder(normalization='global') has no statistics: train it on data "
                                 "that hands over its training series (DataSpec.train_inputs) or call set_stats")
            x = (x - self.mean) / self.std
        m = mask[..., None].to(x.dtype)  # (B, T, 1)
        h = self.proj(x)  # (B, T, D)
        pe = self.positional(x.shape[1], x.device)  # (T, D) or None
        if pe is not None:
            h = h + pe
        h = self.drop(h) * m  # padding steps stay zero
        return VectorSet(x=h, mask=mask, padded=batch.get("padded"))
