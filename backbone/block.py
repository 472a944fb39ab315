"""Pre-norm Transformer block (Xiong et al. 2020, "On Layer Normalization in the
Transformer Architecture"): x + Attn(LN(x)), then x + MLP(LN(x))."""

from __future__ import annotations

from torch import Tensor, nn

from backbone.attention import MultiHeadSelfAttention


class Block(nn.Module):
    """Shapes: x (B, N, D), mask (B, N), bias as in MultiHeadSelfAttention -> (B, N, D)."""

    def __init__(self, attn: MultiHeadSelfAttention, mlp_ratio: float = 4.0, dropout: float = 0.0) -> None:
        super().__init__()
        d = attn.d_model
        self.attn = attn
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)
        hidden = int(d * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, d))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor, mask: Tensor, bias: Tensor | None = None, window: int | None = None) -> Tensor:
        x = x + self.drop(self.attn(self.norm1(x), mask, bias, window))
        return x + self.drop(self.mlp(self.norm2(x)))
