"""Heads: pooling, losses ignoring padding, the regression scaler, label checks."""

import pytest
import torch

from vecset.backbone import VectorSet
from vecset.heads import LabelingHead, SequenceHead


def test_labeling_loss_ignores_padding_and_ignore_index():
    torch.manual_seed(0)
    head = LabelingHead(8, num_classes=3)
    vs = VectorSet.from_list([torch.randn(4, 8), torch.randn(2, 8)])
    out = head(vs)
    assert out.shape == (2, 4, 3)
    y = torch.tensor([[0, 1, 2, -100], [2, 1, -100, -100]])
    y_garbage = y.clone()
    # the padded positions' logits must not matter
    out2 = out.clone()
    out2[1, 2:] = 100.0
    assert torch.isclose(head.loss(out, {"y": y}), head.loss(out2, {"y": y_garbage}))
    # checked on the host, before the transfer (check_batch), not in the loss
    with pytest.raises(ValueError, match=r"label out of range: targets span \[0, 3\] but LabelingHead has num_classes=3"):
        head.check_batch({"y": torch.tensor([[0, 1, 3, -100], [0, 0, -100, -100]])})


@pytest.mark.parametrize("pooling", ["mean", "attention"])
def test_sequence_pooling_ignores_padding(pooling):
    torch.manual_seed(1)
    head = SequenceHead(8, num_outputs=2, pooling=pooling).eval()
    s = torch.randn(3, 8)
    alone = head(VectorSet.from_list([s]))
    padded = head(VectorSet(x=torch.cat([s, torch.randn(2, 8)])[None],
                            mask=torch.tensor([[True] * 3 + [False] * 2])))
    torch.testing.assert_close(alone, padded)
    if pooling == "attention":
        w = head.last_pool_weights
        assert torch.all(w[0, 3:] == 0) and torch.isclose(w.sum(), torch.tensor(1.0))


def test_cls_pooling_needs_cls_token():
    head = SequenceHead(8, 2, pooling="cls")
    with pytest.raises(ValueError, match="cls_token=True"):
        head(VectorSet.from_list([torch.randn(3, 8)]))
    vs = VectorSet.from_list([torch.randn(3, 8)])
    vs.cls = True
    assert head(vs).shape == (1, 2)


def test_regression_scaler_round_trip_and_persistence():
    head = SequenceHead(8, num_outputs=1, task="regression")
    y = torch.tensor([[-10.0], [0.0], [2.0], [4.0]])
    head.fit_scaler(y)
    assert torch.isclose(head.target_mean, torch.tensor([-1.0])).all()
    out = torch.zeros(4, 1)
    assert torch.allclose(head.to_units(out), torch.full((4, 1), -1.0))
    # loss is on standardized targets: predicting the standardized value exactly gives 0
    z = (y - head.target_mean) / head.target_std
    assert head.loss(z, {"y": y}).item() == pytest.approx(0.0, abs=1e-10)
    # buffers travel with the state dict
    other = SequenceHead(8, num_outputs=1, task="regression")
    other.load_state_dict(head.state_dict())
    assert torch.equal(other.target_std, head.target_std)
    assert head.predict(out, {})["value"][0] == [pytest.approx(-1.0)]


def test_sequence_classification_label_out_of_range():
    head = SequenceHead(8, num_outputs=3)
    with pytest.raises(ValueError, match="label out of range"):
        head.check_batch({"y": torch.tensor([5])})


def test_label_smoothing_mixes_the_uniform_target():
    torch.manual_seed(0)
    out, y = torch.randn(5, 4), torch.tensor([0, 3, 1, 1, 2])
    plain = SequenceHead(8, num_outputs=4).loss(out, {"y": y})
    assert torch.equal(plain, torch.nn.functional.cross_entropy(out, y))  # default 0: the plain loss
    logp = out.log_softmax(-1)
    want = (0.9 * -logp.gather(1, y[:, None])[:, 0] + 0.1 * -logp.mean(-1)).mean()
    torch.testing.assert_close(SequenceHead(8, num_outputs=4, label_smoothing=0.1).loss(out, {"y": y}), want)
    with pytest.raises(ValueError, match=r"label_smoothing must be in \[0, 1\), got 1.0"):
        SequenceHead(8, num_outputs=4, label_smoothing=1.0)


@pytest.mark.parametrize("loss", ["mse", "gaussian_nll"])
def test_additive_readout_adds_the_sum_of_per_vector_contributions(loss):
    torch.manual_seed(2)
    head = SequenceHead(8, 2, task="regression", pooling="attention", additive=True, regression_loss=loss).eval()
    plain = SequenceHead(8, 2, task="regression", pooling="attention", regression_loss=loss).eval()
    plain.load_state_dict(head.state_dict(), strict=False)  # the same pooled model, without the sum
    s = torch.randn(3, 8)
    torch.testing.assert_close(head(VectorSet.from_list([s])), plain(VectorSet.from_list([s])))  # last layer 0
    torch.nn.init.normal_(head.contribution[-1].weight)
    per = head.contribution(s)  # (3, 2): each vector's contribution, by hand
    padded = VectorSet(x=torch.cat([s, torch.randn(2, 8)])[None], mask=torch.tensor([[True] * 3 + [False] * 2]))
    out, base = head(padded), plain(VectorSet.from_list([s]))
    torch.testing.assert_close(out[:, :2], base[:, :2] + per.sum(0))  # the means (or values) get the sum
    torch.testing.assert_close(out[:, 2:], base[:, 2:])  # the variances do not
    assert head.contributions(padded).shape == (1, 5, 2) and head.contributions(padded)[0, 3:].eq(0).all()
