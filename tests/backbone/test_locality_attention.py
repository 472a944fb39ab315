"""Locality self-attention (Lee et al. 2021; issue 46) against a plain reference: softmax over
q.k times a learned per-head temperature, with -inf on the diagonal."""

from __future__ import annotations

import torch

from vecset.backbone import Backbone, VectorSet
from vecset.backbone.attention import MultiHeadSelfAttention


def plain_lsa(attn: MultiHeadSelfAttention, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """x (B, N, D), mask (B, N) -> (B, N, D), in one matrix formula."""
    B, N, D = x.shape
    H, Dh = attn.heads, attn.head_dim
    q, k, v = (t.view(B, N, H, Dh).transpose(1, 2) for t in attn.in_proj(x).chunk(3, -1))  # (B, H, N, Dh)
    scores = q @ k.transpose(-1, -2) * attn.lsa_scale.view(1, H, 1, 1)  # (B, H, N, N)
    scores = scores.masked_fill(torch.eye(N, dtype=torch.bool), float("-inf"))
    scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
    out = scores.softmax(-1) @ v  # (B, H, N, Dh)
    return attn.out_proj(out.transpose(1, 2).reshape(B, N, D))


def test_locality_attention_equals_plain_reference():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(8, heads=2, score="locality").eval()
    assert attn.lsa_scale.tolist() == [0.5, 0.5]  # 1 / sqrt(head width 4) to start with
    with torch.no_grad():
        attn.lsa_scale.copy_(torch.tensor([0.3, 1.7]))  # learned: one temperature per head
    x = torch.randn(2, 6, 8)
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    out, ref = attn(x, mask), plain_lsa(attn, x, mask)
    torch.testing.assert_close(out[mask], ref[mask])
    attn.capture = True
    attn(x, mask)
    assert attn.last_weights.diagonal(dim1=-2, dim2=-1).eq(0).all()  # no weight on itself
    out.sum().backward()
    assert attn.lsa_scale.grad.abs().min() > 0  # the temperature learns


def test_locality_attention_windowed_in_blocks_equals_dense_band():
    torch.manual_seed(1)
    attn = MultiHeadSelfAttention(8, heads=2, score="locality", window=3).eval()
    x, mask = torch.randn(2, 23, 8), torch.ones(2, 23, dtype=torch.bool)
    attn.local_impl = "blocked"
    blocked = attn(x, mask)
    attn.local_impl = "dense"
    torch.testing.assert_close(blocked, attn(x, mask))


def test_backbone_locality_a_lone_vector_stays_finite():
    """A set of one real vector has nothing but itself to attend to: it does (no NaN)."""
    torch.manual_seed(2)
    bb = Backbone(d_model=8, depth=2, heads=2, score="locality").eval()
    mask = torch.tensor([[True, True, True], [True, False, False]])
    out = bb(VectorSet(x=torch.randn(2, 3, 8), mask=mask)).x
    assert torch.isfinite(out).all()
