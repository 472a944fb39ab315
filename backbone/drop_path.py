"""Stochastic depth: drop a residual branch for whole samples while training.

Huang et al. 2016, "Deep Networks with Stochastic Depth"; as timm's ``DropPath`` and
torchvision's ``StochasticDepth(mode="row")``: each sample's branch output is kept with
probability 1 - p and then scaled by 1 / (1 - p), so its expectation is the branch's output;
in eval mode it is the identity. The Backbone gives block i of L the rate p * i / (L - 1)
(timm's linear rule: the first block is never dropped, the last at p).
"""

from __future__ import annotations

from torch import Tensor, nn


class DropPath(nn.Module):
    """Zero a whole sample's input with probability ``p`` in training, scale the rest by 1 / (1 - p).

    Shapes: x (B, ...) -> (B, ...); one draw per sample (along dim 0), from the global RNG on x's device.
    """

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"drop_path must be in [0, 1) (the share of samples whose branch is dropped), got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0:
            return x
        keep = 1 - self.p
        mask = x.new_empty((x.shape[0],) + (1,) * (x.dim() - 1)).bernoulli_(keep)  # (B, 1, ...)
        return x * mask.div_(keep)

    def extra_repr(self) -> str:
        return f"p={self.p}"
