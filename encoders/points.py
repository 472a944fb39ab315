"""PointEncoder: scalar points (e.g. the keys of kernel regression) -> VectorSet of
width 1, unchanged, so that attention pooling sees the raw coordinates."""

from __future__ import annotations

import torch

from vecset.contracts.vectorset import VectorSet
from vecset.encoders.contract import Encoder


class PointEncoder(Encoder):
    """Shapes: batch[field] (B, K) float, optional batch["key_mask"] (B, K) bool ->
    VectorSet x (B, K, 1), mask (B, K)."""

    def __init__(self, field: str = "keys") -> None:
        super().__init__()
        self.field = field
        self.out_width = 1  # the raw scalar keys

    def forward(self, batch: dict) -> VectorSet:
        k = batch[self.field]
        if k.dim() != 2:
            raise ValueError(f"batch['{self.field}'] must be (B, K) scalars, got {tuple(k.shape)}")
        if "key_mask" in batch:
            return VectorSet(x=k[..., None].float(), mask=batch["key_mask"], padded=batch.get("padded"))
        return VectorSet(x=k[..., None].float(), mask=torch.ones_like(k, dtype=torch.bool), padded=False)
