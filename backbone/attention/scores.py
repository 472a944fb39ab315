"""Score functions A = score(Q, K), one class each, chosen by name (``SCORE_FUNCTIONS``).

Vaswani et al. 2017 (scaled dot product); Luong et al. 2015 (dot product); Bahdanau et al.
2015 (additive: w_v^T tanh(W_q q + W_k k)); Nadaraya 1964 / Watson 1964 (the Gaussian kernel,
-|q - k|^2 / 2, whose softmax gives Nadaraya-Watson weights); Lee et al. 2021, "Vision Transformer
for Small-Size Datasets" (locality self-attention: a learned temperature, the diagonal masked).

A score is stateless: its learned parameters (the additive score's) live on the attention
module, so their state_dict keys (``add_wq``, ``add_wk``, ``add_wv``) are those of the
checkpoints written before these classes existed. A dot-family score also says how SDPA
computes it under softmax: ``scale * q.k + key_bias(k)``, up to a per-query constant that
softmax ignores.
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

import torch
from torch import Tensor, nn

Score = Literal["scaled_dot", "dot", "additive", "gaussian", "locality"]


class ScoreFunction:
    """Pairwise scores of queries against keys, per head.

    Shapes: q (B, H, Nq, Dh), k (B, H, Nk, Dh) -> (B, H, Nq, Nk)
    """

    name: ClassVar[str]
    # whether softmax over this score runs on scaled_dot_product_attention
    sdpa: ClassVar[bool] = True
    # whether each vector's score against itself is masked (the paths know where the diagonal is)
    masks_self: ClassVar[bool] = False
    # the width of the score's hidden layer (the additive score's); None: it has none
    additive_dim: int | None = None

    def __init__(self, heads: int, head_dim: int) -> None:
        self.heads, self.head_dim = heads, head_dim

    def add_parameters(self, attn: nn.Module) -> None:
        """Register the score's learned parameters on the attention module (none by default)."""

    def __call__(self, q: Tensor, k: Tensor, attn: nn.Module) -> Tensor:
        raise NotImplementedError

    def sdpa_scale(self) -> float:
        """The factor SDPA puts on q.k."""
        return 1.0

    def key_bias(self, k: Tensor) -> Tensor | None:
        """(B, H, Nk) additive per-key score term for SDPA, or None."""
        return None

    def pair_memory(self, shape: tuple[int, ...]) -> tuple[tuple[int, ...], float]:
        """(shape, copies) of the pairwise tensors the reference path holds for (B, H, Nq, Nk)
        scores: scores, weights and their gradients, about four."""
        return shape, 4.0

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ScaledDot(ScoreFunction):
    """q.k / sqrt(Dh)."""

    name = "scaled_dot"

    def __call__(self, q: Tensor, k: Tensor, attn: nn.Module) -> Tensor:
        return q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)

    def sdpa_scale(self) -> float:
        return 1 / math.sqrt(self.head_dim)


class Dot(ScoreFunction):
    """q.k, unscaled."""

    name = "dot"

    def __call__(self, q: Tensor, k: Tensor, attn: nn.Module) -> Tensor:
        return q @ k.transpose(-1, -2)


class Gaussian(ScoreFunction):
    """-|q - k|^2 / 2: softmax gives the Gaussian kernel's Nadaraya-Watson weights. It equals
    q.k - |k|^2 / 2 - |q|^2 / 2, and softmax ignores the per-query last term."""

    name = "gaussian"

    def __call__(self, q: Tensor, k: Tensor, attn: nn.Module) -> Tensor:
        return -torch.cdist(q, k).pow(2) / 2

    def key_bias(self, k: Tensor) -> Tensor:
        return -k.pow(2).sum(-1) / 2  # (B, H, Nk)


class Additive(ScoreFunction):
    """w_v^T tanh(W_q q_i + W_k k_j) per head, with a hidden layer of ``additive_dim``."""

    name = "additive"
    sdpa = False

    def __init__(self, heads: int, head_dim: int, additive_dim: int | None = None) -> None:
        super().__init__(heads, head_dim)
        if additive_dim is not None and additive_dim < 1:
            raise ValueError(f"additive_dim must be >= 1 (or None: the head width), got {additive_dim}")
        self.additive_dim = additive_dim or head_dim

    def add_parameters(self, attn: nn.Module) -> None:
        H, Dh, a = self.heads, self.head_dim, self.additive_dim
        attn.add_wq = nn.Parameter(torch.randn(H, Dh, a) / math.sqrt(Dh))
        attn.add_wk = nn.Parameter(torch.randn(H, Dh, a) / math.sqrt(Dh))
        attn.add_wv = nn.Parameter(torch.randn(H, a) / math.sqrt(a))

    def __call__(self, q: Tensor, k: Tensor, attn: nn.Module) -> Tensor:
        qa = torch.einsum("bhnd,hda->bhna", q, attn.add_wq)
        ka = torch.einsum("bhnd,hda->bhna", k, attn.add_wk)
        return torch.einsum("bhija,ha->bhij", torch.tanh(qa[:, :, :, None] + ka[:, :, None]), attn.add_wv)

    def pair_memory(self, shape: tuple[int, ...]) -> tuple[tuple[int, ...], float]:
        # tanh(W_q q_i + W_k k_j) holds additive_dim values per pair: the sum, the tanh (kept
        # for backward) and its gradient, beside the four pairwise tensors
        return (*shape, self.additive_dim), 3 + 4 / self.additive_dim

    def __repr__(self) -> str:
        return f"Additive(additive_dim={self.additive_dim})"


class Locality(ScoreFunction):
    """Locality self-attention's score (LSA, Lee et al. 2021): q.k times a learned temperature
    per head (``lsa_scale`` on the attention module, starting at 1 / sqrt(Dh)), with each
    vector's score against itself masked, so that the weight goes to the others (a ViT trained
    from scratch on small images otherwise attends mostly to itself). The paths mask the
    self pairs (``masks_self``: the diagonal, or offset 0 in blocks) with the dtype's lowest
    finite value, not -inf: a vector that sees nothing else still attends to itself (no NaN).
    Runs on the reference and blocked paths, not on SDPA (its temperature is per head).
    """

    name = "locality"
    sdpa = False
    masks_self = True

    def add_parameters(self, attn: nn.Module) -> None:
        attn.lsa_scale = nn.Parameter(torch.full((self.heads,), self.head_dim**-0.5))

    def __call__(self, q: Tensor, k: Tensor, attn: nn.Module) -> Tensor:
        return q @ k.transpose(-1, -2) * attn.lsa_scale.to(q.dtype).view(1, -1, 1, 1)  # (B, H, Nq, Nk)


def mask_self(scores: Tensor, self_pairs: Tensor) -> Tensor:
    """``scores`` with the pairs of a vector with itself (``self_pairs`` bool, broadcastable) at
    the dtype's lowest finite value: no weight under softmax, relu or sigmoid, unless a row has
    nothing else."""
    return scores.masked_fill(self_pairs, torch.finfo(scores.dtype).min)


SCORE_FUNCTIONS: dict[str, type[ScoreFunction]] = {c.name: c for c in (ScaledDot, Dot, Additive, Gaussian, Locality)}
SCORES = tuple(SCORE_FUNCTIONS)


def make_score(name: str, heads: int, head_dim: int, additive_dim: int | None = None) -> ScoreFunction:
    """The score function called ``name`` (one of ``SCORES``)."""
    if name not in SCORE_FUNCTIONS:
        raise ValueError(f"score must be one of {SCORES}, got {name!r}")
    if name == "additive":
        return Additive(heads, head_dim, additive_dim)
    if additive_dim is not None and additive_dim < 1:
        raise ValueError(f"additive_dim must be >= 1 (or None: the head width), got {additive_dim}")
    return SCORE_FUNCTIONS[name](heads, head_dim)
