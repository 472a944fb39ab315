"""The decoders a ``Seq2SeqHead`` runs (swappable classes, injected with ``class_path``):

- ``TransformerDecoder``: pre-norm blocks of causal self-attention, cross-attention over
  the memory and an MLP (Vaswani et al. 2017), built from the backbone's
  ``MultiHeadSelfAttention`` and ``MultiHeadCrossAttention``;
- ``GRUAttentionDecoder``: a GRU whose input at step t is the previous token's embedding
  joined to a context vector from additive attention with the previous hidden state as
  query (Bahdanau, Cho & Bengio 2015; the layout of d2l.ai sec. 11.4).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from vecset.backbone.attention import MultiHeadSelfAttention, Score
from vecset.backbone.positional import sinusoid
from vecset.heads.seq2seq.cross_attention import MultiHeadCrossAttention


def causal_mask(t: int, device: torch.device | None = None) -> Tensor:
    """(T, T) bool, True where query i may see key j (j <= i)."""
    return torch.ones(t, t, dtype=torch.bool, device=device).tril()


# -- decoders ----------------------------------------------------------------------------
class DecoderBlock(nn.Module):
    """x + SelfAttn(LN(x)) [causal], x + CrossAttn(LN(x), memory), x + MLP(LN(x)).

    Shapes: x (B, T, D), x_mask (B, T), memory (B, N, D), memory_mask (B, N) -> (B, T, D)
    """

    def __init__(self, d_model: int, heads: int, mlp_ratio: float, dropout: float, score: Score) -> None:
        super().__init__()
        self.self_attn = MultiHeadSelfAttention(d_model, heads, score, "softmax", None, dropout)
        self.cross_attn = MultiHeadCrossAttention(d_model, heads, score, "softmax", dropout)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        hidden = int(d_model * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(d_model, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, d_model))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor, x_mask: Tensor, memory: Tensor, memory_mask: Tensor) -> Tensor:
        B, T, _ = x.shape
        causal = causal_mask(T, x.device).expand(B, T, T)  # (B, T, T) allowed pairs
        x = x + self.drop(self.self_attn(self.norm1(x), x_mask, causal))
        x = x + self.drop(self.cross_attn(self.norm2(x), memory, memory_mask))
        return x + self.drop(self.mlp(self.norm3(x)))


class TransformerDecoder(nn.Module):
    """Causal Transformer decoder over embedded target prefixes (sinusoidal positions).

    Args:
        d_model: width D. depth: blocks. heads: attention heads. mlp_ratio: MLP width / D.
        dropout: dropout in blocks and on attention weights. score: attention score
            (see ``MultiHeadSelfAttention``).

    Decoding recomputes the whole prefix at each step (``incremental = False``): outputs
    are short (G2P: < 30 tokens), and it keeps one code path for training and decoding.

    Shapes:
        emb (B, T, D), emb_mask (B, T), memory (B, N, D), memory_mask (B, N) ->
        (out (B, T, D), state None, weights (B, T, N) or None)
    """

    incremental = False

    def __init__(self, d_model: int = 64, depth: int = 2, heads: int = 4, mlp_ratio: float = 4.0,
                 dropout: float = 0.0, score: Score = "scaled_dot") -> None:
        super().__init__()
        self.d_model = d_model
        self.blocks = nn.ModuleList(DecoderBlock(d_model, heads, mlp_ratio, dropout, score) for _ in range(depth))
        self.norm = nn.LayerNorm(d_model)

    def init_state(self, memory: Tensor, memory_mask: Tensor) -> None:
        return None

    def forward(self, emb: Tensor, emb_mask: Tensor, memory: Tensor, memory_mask: Tensor,
                state: None = None, need_weights: bool = False) -> tuple[Tensor, None, Tensor | None]:
        B, T, D = emb.shape
        x = emb + sinusoid(torch.arange(T, device=emb.device), D)
        last = self.blocks[-1].cross_attn
        last.capture = need_weights
        try:
            for block in self.blocks:
                x = block(x, emb_mask, memory, memory_mask)
            weights = last.last_weights.mean(1) if need_weights else None  # (B, T, N), heads averaged
        finally:
            last.capture, last.last_weights = False, None
        return self.norm(x), None, weights


class GRUAttentionDecoder(nn.Module):
    """GRU decoder with additive (Bahdanau) attention over the memory.

    At step t: context c_t = attention(query h_{t-1}, memory); h_t = GRU([e(y_{t-1}); c_t],
    h_{t-1}); output W [h_t; c_t]. The initial state is a projection of the mean memory
    vector. The attention is ``MultiHeadCrossAttention(score="additive", heads=1)``:
    w_v^T tanh(W_q q + W_k k), softmax over the real memory vectors only.

    Args:
        d_model: width D (embedding, hidden state, memory). layers: stacked GRU layers.
        dropout: between GRU layers and on the output.

    Shapes:
        emb (B, T, D), memory (B, N, D), memory_mask (B, N), state (B, layers, D) ->
        (out (B, T, D), state (B, layers, D), weights (B, T, N))
    """

    incremental = True

    def __init__(self, d_model: int = 64, layers: int = 1, dropout: float = 0.0) -> None:
        super().__init__()
        self.d_model, self.layers = d_model, layers
        self.attention = MultiHeadCrossAttention(d_model, heads=1, score="additive")
        self.gru = nn.GRU(2 * d_model, d_model, num_layers=layers, batch_first=True,
                          dropout=dropout if layers > 1 else 0.0)
        self.init = nn.Linear(d_model, layers * d_model)
        self.out = nn.Sequential(nn.Dropout(dropout), nn.Linear(2 * d_model, d_model))

    def init_state(self, memory: Tensor, memory_mask: Tensor) -> Tensor:
        m = memory_mask[..., None].to(memory.dtype)
        mean = (memory * m).sum(1) / m.sum(1).clamp(min=1)  # (B, D)
        return torch.tanh(self.init(mean)).reshape(-1, self.layers, self.d_model)  # (B, L, D)

    def forward(self, emb: Tensor, emb_mask: Tensor | None, memory: Tensor, memory_mask: Tensor,
                state: Tensor, need_weights: bool = True) -> tuple[Tensor, Tensor, Tensor]:
        B, T, D = emb.shape
        outs, weights = [], []
        self.attention.capture = True  # additive scores run on the reference path anyway
        try:
            for t in range(T):
                ctx = self.attention(state[:, -1:], memory, memory_mask)  # (B, 1, D)
                weights.append(self.attention.last_weights[:, 0, 0])  # (B, N)
                h, hn = self.gru(torch.cat([emb[:, t : t + 1], ctx], -1), state.transpose(0, 1).contiguous())
                state = hn.transpose(0, 1)  # (B, L, D)
                outs.append(self.out(torch.cat([h, ctx], -1)))  # (B, 1, D)
        finally:
            self.attention.capture, self.attention.last_weights = False, None
        return torch.cat(outs, 1), state, torch.stack(weights, 1)
