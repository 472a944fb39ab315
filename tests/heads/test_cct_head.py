"""SequenceHead in the CCT recipe (issue 46): its attention pooling is CCT's sequence pooling
(Hassani et al. 2021), held to the formula; its loss takes MixUp/CutMix's class probabilities
with label smoothing."""

from __future__ import annotations

import torch

from vecset.backbone import VectorSet
from vecset.heads import SequenceHead


def test_attention_pooling_is_cct_sequence_pooling():
    """CCT's SeqPool: w = softmax over the real vectors of x W_g, pooled = sum_i w_i x_i. The head's
    ``attention`` pooling scores key(x) . q / sqrt(D) = x (W_k^T q / sqrt(D)) + a constant per set
    (softmax drops it): SeqPool with W_g = W_k^T q / sqrt(D)."""
    torch.manual_seed(0)
    D = 8
    head = SequenceHead(D, 3, pooling="attention")
    with torch.no_grad():
        head.query.normal_()  # larger than its init, so the weights are far from uniform
    x = torch.randn(2, 5, D)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    pooled = head.pool(VectorSet(x=x, mask=mask))
    w_g = head.key.weight.T @ head.query / D**0.5  # (D,)
    w = (x @ w_g).masked_fill(~mask, float("-inf")).softmax(-1)  # (B, N)
    torch.testing.assert_close(pooled, (w[..., None] * x).sum(1))
    torch.testing.assert_close(head.last_pool_weights, w)
    assert head.last_pool_weights[1, 3:].eq(0).all()  # padded vectors: weight exactly 0
    assert not torch.allclose(w[0], torch.full((5,), 0.2), atol=1e-2)


def test_soft_targets_with_label_smoothing_equal_the_reference():
    """MixUp/CutMix give (B, K) class probabilities p; with smoothing e the target is
    (1 - e) p + e / K, and the loss the mean over the batch of -sum_k target_k log softmax_k."""
    torch.manual_seed(0)
    K, e = 5, 0.1
    head = SequenceHead(8, K, label_smoothing=e)
    out = torch.randn(4, K)
    lam = torch.rand(4, 1)
    a, b = torch.eye(K)[[0, 1, 2, 3]], torch.eye(K)[[3, 0, 4, 3]]
    y = lam * a + (1 - lam) * b  # MixUp's labels
    target = (1 - e) * y + e / K
    ref = -(target * out.log_softmax(-1)).sum(-1).mean()
    torch.testing.assert_close(head.loss(out, {"y": y}), ref)
    # one-hot probabilities are the class indices' loss
    torch.testing.assert_close(head.loss(out, {"y": a}), head.loss(out, {"y": torch.arange(4)}))
