"""GlobalStandardization: per-feature mean and standard deviation fitted once on the training
data and kept in the checkpoint (the ``normalization: global`` of the speech and time-series
encoders)."""

from __future__ import annotations

import torch
from torch import Tensor


class GlobalStandardization:
    """A mixin for an ``nn.Module`` encoder: buffers ``mean``, ``std`` (``dim``) and ``stats_fitted``.
    Whether they are fitted is also kept on the host (``_stats_known``), so that a forward never
    reads a device value (a host synchronization on a GPU).

    Shapes:
        standardize: x (..., dim) -> (..., dim)
    """

    def _init_standardization(self, dim: int) -> None:
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("std", torch.ones(dim))
        self.register_buffer("stats_fitted", torch.tensor(False))
        self._stats_known = False

    @torch.no_grad()
    def set_global_stats(self, rows: list[Tensor]) -> None:
        """Fit on a list of (T_i, dim) training rows: each feature's mean and standard deviation
        over all rows (a feature without spread, or a single row: 1; at least 1e-5)."""
        x = torch.cat(rows).double()  # (sum T, dim)
        if x.shape[-1] != self.mean.numel():
            raise ValueError(f"{type(self).__name__}(in_dim={self.mean.numel()}) got training rows of "
                             f"{x.shape[-1]} features")
        self.mean.copy_(x.mean(0).float())
        self.std.copy_(x.std(0).nan_to_num(1.0).clamp_min(1e-5).float())
        self.stats_fitted.fill_(True)
        self._stats_known = True

    def standardize(self, x: Tensor, what: str) -> Tensor:
        """(x - mean) / std; an error naming ``what`` hands the training rows over when unfitted."""
        if not self._stats_known:
            raise ValueError(f"{type(self).__name__}(normalization='global') has no statistics: train it on data "
                             f"that hands over its {what} (DataSpec.train_inputs) or call set_global_stats")
        return (x - self.mean) / self.std

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        fitted = state_dict.get(prefix + "stats_fitted")
        self._stats_known = bool(fitted) if fitted is not None else self._stats_known  # at load, not per step
