"""Normalizations A' = normalize(A) over the allowed keys, one class each, chosen by name.

Softmax is the usual choice (Vaswani et al. 2017); an elementwise relu or sigmoid, without
a sum-to-one constraint, is the alternative worth comparing (Wortsman et al. 2023,
"Replacing softmax with ReLU in Vision Transformers"; Ramapuram et al. 2024, "Theory,
Analysis, and Best Practices for Sigmoid Self-Attention").
"""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from torch import Tensor

Normalize = Literal["softmax", "relu", "sigmoid"]


class Normalization:
    """Scores -> weights; disallowed pairs get exactly zero weight.

    Shapes: scores (..., Nq, Nk) float, allowed broadcastable to it, bool -> (..., Nq, Nk)
    """

    name: ClassVar[str]
    # whether scaled_dot_product_attention computes it (with a dot-family score)
    sdpa: ClassVar[bool] = False

    def __call__(self, scores: Tensor, allowed: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Softmax(Normalization):
    """exp(a_ij) / sum_j' exp(a_ij') over the allowed keys."""

    name = "softmax"
    sdpa = True

    def __call__(self, scores: Tensor, allowed: Tensor) -> Tensor:
        return scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)


class ReLU(Normalization):
    """max(a_ij, 0) on the allowed pairs."""

    name = "relu"

    def __call__(self, scores: Tensor, allowed: Tensor) -> Tensor:
        return torch.relu(scores) * allowed


class Sigmoid(Normalization):
    """1 / (1 + exp(-a_ij)) on the allowed pairs."""

    name = "sigmoid"

    def __call__(self, scores: Tensor, allowed: Tensor) -> Tensor:
        return torch.sigmoid(scores) * allowed


NORMALIZATIONS: dict[str, type[Normalization]] = {c.name: c for c in (Softmax, ReLU, Sigmoid)}
NORMALIZES = tuple(NORMALIZATIONS)


def make_normalization(name: str) -> Normalization:
    """The normalization called ``name`` (one of ``NORMALIZES``)."""
    if name not in NORMALIZATIONS:
        raise ValueError(f"normalize must be one of {NORMALIZES}, got {name!r}")
    return NORMALIZATIONS[name]()
