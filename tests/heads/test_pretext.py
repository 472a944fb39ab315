"""PretextHead (heads/pretext.py): shapes, loss, metrics, the hand-over check."""

from __future__ import annotations

import pytest
import torch

from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet
from vecset.heads import PretextHead


def _inputs(B=3, N=5, D=16, A=13, F=7):
    torch.manual_seed(0)
    mask = torch.ones(B, N, dtype=torch.bool)
    mask[0, 3:] = False
    target = torch.full((B, N), -100)
    target[:, 1] = torch.tensor([2, 4, 2])
    return VectorSet(x=torch.randn(B, N, D), mask=mask), {"atom_target": target, "desc_target": torch.randn(B, F)}


def test_outputs_loss_and_metrics():
    vs, batch = _inputs()
    head = PretextHead(16, num_atom_types=13, num_descriptors=7)
    out = head(vs)
    assert out["atom_logits"].shape == (3, 5, 13) and out["desc"].shape == (3, 7)
    loss = head.loss(out, batch)
    ce = torch.nn.functional.cross_entropy(out["atom_logits"][:, 1], batch["atom_target"][:, 1])
    mse = torch.nn.functional.mse_loss(out["desc"], batch["desc_target"])
    torch.testing.assert_close(loss, ce + mse)
    m = head.metrics()
    m.update(*head.metric_inputs(out, batch))
    res = m.compute()
    right = (out["atom_logits"][:, 1].argmax(-1) == batch["atom_target"][:, 1]).float().mean()
    torch.testing.assert_close(res["atom_acc"], right)
    torch.testing.assert_close(res["desc_rmse"], mse.sqrt())


def test_padding_does_not_change_the_pooled_descriptors():
    vs, _ = _inputs()
    head = PretextHead(16, num_descriptors=7).eval()
    a = head(vs)["desc"][0]
    x = vs.x.clone()
    x[0, 3:] = 100.0
    b = head(VectorSet(x=x, mask=vs.mask))["desc"][0]
    torch.testing.assert_close(a, b)


def test_the_hand_over_checks_atom_types_and_descriptors():
    head = PretextHead(16, num_atom_types=13, num_descriptors=7)
    head.receive(DataSpec(class_names=list("abcdefghijklm"), train_targets=torch.zeros(4, 7), fit=True))
    with pytest.raises(ValueError, match="predicts 13 classes but the data has 2"):
        head.receive(DataSpec(class_names=["a", "b"]))
    with pytest.raises(ValueError, match=r"num_descriptors=7\) but the data gives 9"):
        head.receive(DataSpec(class_names=list("abcdefghijklm"), train_targets=torch.zeros(4, 9), fit=True))
    with pytest.raises(ValueError, match="not both 0"):
        PretextHead(16, desc_weight=0, atom_weight=0)
