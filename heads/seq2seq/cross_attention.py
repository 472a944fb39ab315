"""Multi-head cross-attention: queries from one sequence, keys and values from another.

Vaswani et al. 2017 (the decoder's encoder-decoder attention); Bahdanau et al. 2015
(additive score, ``score="additive"``). It is ``MultiHeadSelfAttention`` with the queries
taken from ``x`` and the keys/values from ``memory``: the same ``in_proj`` (its Q rows on
``x``, its K and V rows on ``memory``), the same score functions, normalizations,
reference path and fast SDPA path, so self- and cross-attention cannot drift apart.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from vecset.backbone.attention import MultiHeadSelfAttention, Normalize, Score, paths


class MultiHeadCrossAttention(MultiHeadSelfAttention):
    """Queries ``x`` (B, T, D) attend over ``memory`` (B, N, D) where ``memory_mask`` is True.

    Args: as ``MultiHeadSelfAttention`` (no ``window``: there is no shared position axis).
    When ``capture`` is True the reference path runs and ``last_weights`` keeps the
    (B, H, T, N) weights (the alignment between output and input).

    Shapes:
        x: (B, T, D), memory: (B, N, D), memory_mask: (B, N) bool -> (B, T, D)
    """

    def __init__(self, d_model: int, heads: int = 4, score: Score = "scaled_dot",
                 normalize: Normalize = "softmax", dropout: float = 0.0,
                 additive_dim: int | None = None) -> None:
        super().__init__(d_model, heads, score, normalize, None, dropout, additive_dim)

    def _split(self, t: Tensor) -> Tensor:
        B, L, _ = t.shape
        return t.reshape(B, L, self.heads, self.head_dim).transpose(1, 2)  # (B, H, L, Dh)

    def forward(self, x: Tensor, memory: Tensor, memory_mask: Tensor) -> Tensor:  # type: ignore[override]
        B, T, D = x.shape
        if memory_mask.shape != memory.shape[:2]:
            raise ValueError(f"memory_mask must be (B, N) = {tuple(memory.shape[:2])}, got {tuple(memory_mask.shape)}")
        w, b = self.in_proj.weight, self.in_proj.bias
        q = self._split(F.linear(x, w[:D], b[:D]))  # (B, H, T, Dh)
        kv = F.linear(memory, w[D:], b[D:])  # (B, N, 2D)
        k, v = self._split(kv[..., :D]), self._split(kv[..., D:])  # (B, H, N, Dh)
        allowed = memory_mask[:, None, None, :]  # (B, 1, 1, N)
        if self.fused:
            key_bias = self.score_fn.key_bias(k)  # (B, H, N) or None
            out = paths.fused_dense(q, k, v, allowed, None, key_bias, self.score_fn.sdpa_scale(), self._dropout_p())
        else:
            out, weights = self.reference(q, k, v, memory_mask, None, None)
            if self.capture:
                self.last_weights = weights.detach()
        out = out.transpose(1, 2).reshape(B, T, D)  # (B, T, D)
        return self.out_proj(out)
