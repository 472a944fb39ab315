"""Stochastic depth (issue 46): DropPath against torchvision's, the Backbone's linear rates, eval
unchanged, a block's seeded per-sample pattern, the expectation kept by the 1 / (1 - p) scaling."""

from __future__ import annotations

import pytest
import torch
from torchvision.ops import stochastic_depth

from vecset.backbone import Backbone, VectorSet
from vecset.backbone.attention import MultiHeadSelfAttention
from vecset.backbone.block import Block
from vecset.backbone.drop_path import DropPath


def test_drop_path_is_per_sample_and_equals_torchvision():
    x = torch.randn(16, 5, 4)
    torch.manual_seed(0)
    out = DropPath(0.4).train()(x)
    torch.manual_seed(0)
    ref = stochastic_depth(x, 0.4, "row", training=True)
    torch.testing.assert_close(out, ref)
    kept = out.ne(0).flatten(1)
    assert (kept.all(1) | ~kept.any(1)).all()  # a sample is kept whole or dropped whole
    assert 0 < int(kept.all(1).sum()) < 16
    torch.testing.assert_close(out[kept.all(1)], x[kept.all(1)] / 0.6)


def test_drop_path_keeps_the_expectation():
    torch.manual_seed(0)
    out = DropPath(0.3).train()(torch.ones(40000, 1))
    assert out.unique().tolist() == pytest.approx([0.0, 1 / 0.7])
    assert out.mean().item() == pytest.approx(1.0, abs=0.01)


def test_backbone_drop_path_rates_grow_linearly_and_eval_is_unchanged():
    torch.manual_seed(0)
    bb = Backbone(d_model=16, depth=4, heads=2, drop_path=0.3)
    assert [getattr(b.drop_path, "p", 0.0) for b in bb.blocks] == pytest.approx([0.0, 0.1, 0.2, 0.3])
    plain = Backbone(d_model=16, depth=4, heads=2)
    plain.load_state_dict(bb.state_dict())  # no parameters of its own: the same keys
    vs = VectorSet(x=torch.randn(3, 6, 16), mask=torch.ones(3, 6, dtype=torch.bool))
    torch.testing.assert_close(bb.eval()(vs).x, plain.eval()(vs).x)
    assert not torch.allclose(bb.train()(vs).x, plain.train()(vs).x)
    with pytest.raises(ValueError, match=r"^drop_path must be in \[0, 1\)"):
        Backbone(d_model=16, drop_path=1.0)


def test_block_drops_each_branch_per_sample_with_a_seed():
    torch.manual_seed(0)
    B, N, D, p = 8, 5, 16, 0.5
    block = Block(MultiHeadSelfAttention(D, 2), mlp_ratio=2.0, drop_path=p).train()
    x, mask = torch.randn(B, N, D), torch.ones(B, N, dtype=torch.bool)
    torch.manual_seed(1)
    out = block(x, mask)
    torch.manual_seed(1)  # the draws in forward order: the attention branch's, then the MLP's
    m1, m2 = (torch.empty(B, 1, 1).bernoulli_(1 - p) / (1 - p) for _ in range(2))
    with torch.no_grad():
        x1 = x + block.attn(block.norm1(x), mask) * m1
        ref = x1 + block.mlp(block.norm2(x1)) * m2
    torch.testing.assert_close(out, ref)
    dropped = (m1 == 0) & (m2 == 0)
    assert dropped.any()
    torch.testing.assert_close(out[dropped.flatten()], x[dropped.flatten()])  # both branches off: the input
