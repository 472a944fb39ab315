"""The one step TaskModule and MultiTaskModule share: the head gets the batch only when it
reads it, both modules compute the same loss and metrics for the same task (names differ by
the task prefix), and parts outside the contracts are refused with a clear error."""

import copy
import warnings

import pytest
import torch
from torch import nn

from vecset.backbone import Backbone
from vecset.encoders import VectorEncoder
from vecset.encoders.collate import pad_sets
from vecset.heads import LabelingHead, SequenceHead
from vecset.pipelines.data.synthetic import AboveMeanSets
from vecset.pipelines.training.multitask import MultiTaskModule
from vecset.pipelines.training.step import forward_task, metric_prefix
from vecset.pipelines.training.task import TaskModule


class RecordingHead(LabelingHead):
    """A LabelingHead that keeps the ``batch`` argument it was called with."""

    def forward(self, vs, features=None, batch=None):
        self.seen = batch
        return super().forward(vs, features, batch)


def test_head_gets_the_batch_only_when_it_reads_it():
    batch = pad_sets(AboveMeanSets(4, 3, 5, seed=0).items)
    head = RecordingHead(8, 2)
    out = forward_task(VectorEncoder(2, 8), nn.Identity(), head, batch)
    assert out.shape == (4, batch["x"].shape[1], 2) and head.seen is None
    head.needs_batch = True
    forward_task(VectorEncoder(2, 8), nn.Identity(), head, batch)
    assert head.seen is batch


def test_metric_names():
    assert [metric_prefix(s) for s in ("train", "val", "test")] == ["train_", "val_", "test_"]
    assert metric_prefix("val", "speech") == "speech/val_"


@pytest.mark.filterwarnings("ignore:You are trying to `self.log\\(\\)`")  # no Trainer here: logging is off
@pytest.mark.parametrize("stage", ["train", "val"])
def test_single_and_multi_task_steps_agree(stage):
    torch.manual_seed(0)
    enc, bb, head = VectorEncoder(2, 16), Backbone(16, 1, 2, dropout=0.0), SequenceHead(16, 2)
    single = TaskModule(copy.deepcopy(enc), copy.deepcopy(bb), copy.deepcopy(head))
    multi = MultiTaskModule(copy.deepcopy(bb), {"sets": copy.deepcopy(enc)}, {"sets": copy.deepcopy(head)})
    items = AboveMeanSets(8, 3, 6, seed=0).items
    batch = pad_sets([it | {"y": it["y"][0]} for it in items])  # one class per set
    loss_single = single._step(batch, stage)
    loss_multi = multi._task_step("sets", batch, stage)
    torch.testing.assert_close(loss_single, loss_multi, rtol=0, atol=0)
    m_single = getattr(single, f"{stage}_metrics").compute()
    m_multi = multi.metrics[f"{stage}__sets"].compute()
    assert list(m_single) == [f"{stage}_acc"] and list(m_multi) == [f"sets/{stage}_acc"]
    assert m_single[f"{stage}_acc"] == m_multi[f"sets/{stage}_acc"]


def test_parts_outside_the_contracts_are_refused():
    with pytest.raises(TypeError, match=r"the head Linear is not a vecset.heads.Head"):
        TaskModule(VectorEncoder(2, 8), Backbone(8, 1, 2), nn.Linear(8, 2))
    with pytest.raises(TypeError, match=r"task 'a': the encoder Linear is not a vecset.encoders.Encoder"):
        MultiTaskModule(Backbone(8, 1, 2), {"a": nn.Linear(2, 8)}, {"a": LabelingHead(8, 2)})


def test_training_loss_epoch_mean_is_weighted_and_not_in_checkpoints():
    """The training loss is logged through a MeanMetric (synced across DDP processes at the
    epoch's end): a step's value is its batch's, the epoch's weighted by batch size (torchmetrics
    1.9 dropped the weights with nan_strategy="disable"); its state is not in the state_dict, so
    checkpoints keep their keys."""
    from vecset.pipelines.training.step import train_loss_mean

    m = train_loss_mean()
    assert m(torch.tensor(1.0), 64).item() == 1.0 and m(torch.tensor(3.0), 16).item() == 3.0
    assert m.compute().item() == pytest.approx((64 * 1.0 + 16 * 3.0) / 80)
    # a NaN loss (NonFiniteGuard's to report) makes the mean NaN, without a warning of its own
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert m(torch.tensor(float("nan")), 8).isnan() and m.compute().isnan()
    single = TaskModule(VectorEncoder(2, 8), Backbone(8, 1, 2), LabelingHead(8, 2))
    multi = MultiTaskModule(Backbone(8, 1, 2), {"a": VectorEncoder(2, 8)}, {"a": LabelingHead(8, 2)})
    for model in (single, multi):
        assert not [k for k in model.state_dict() if "loss" in k]


@pytest.mark.filterwarnings("ignore:You are trying to `self.log\\(\\)`")  # no Trainer here: logging is off
def test_test_time_flip_averages_the_mirror_images_outside_training():
    from vecset.encoders import ConvTokenizer

    torch.manual_seed(0)
    enc, bb, head = ConvTokenizer(1, 16, layers=2, hidden_channels=4), Backbone(16, 1, 2, dropout=0.0), SequenceHead(16, 3)
    batch = {"image": torch.randn(5, 1, 12, 12), "y": torch.tensor([0, 1, 2, 0, 1]), "ids": torch.arange(5)}
    plain = forward_task(enc, bb, head, batch)
    mirror = forward_task(enc, bb, head, {**batch, "image": batch["image"].flip(-1)})
    assert not torch.allclose(plain, mirror)  # the model itself is not mirror-symmetric
    torch.testing.assert_close(forward_task(enc, bb, head, batch, test_time_flip=True), (plain + mirror) / 2)
    module = TaskModule(enc, bb, head, test_time_flip=True).eval()
    torch.testing.assert_close(module(batch), (plain + mirror) / 2)
    assert module.hparams.test_time_flip
    # a checkpoint trained without the flip is evaluated with it: not a config mismatch
    from vecset.pipelines.training.checkpoint_fit import hparams_mismatch

    trained = dict(TaskModule(enc, bb, head).hparams)
    assert hparams_mismatch(trained, dict(module.hparams)) == []
    assert hparams_mismatch(trained, dict(TaskModule(enc, bb, head, test_time_flip=True, freeze=["encoder"]).hparams))
    # validation's loss is that of the averaged logits; training's of the images as they come
    torch.testing.assert_close(module._step(batch, "val"), head.loss((plain + mirror) / 2, batch))
    torch.testing.assert_close(module.train()._step(batch, "train"), head.loss(plain, batch))
    with pytest.raises(ValueError, match=r"test_time_flip averages the outputs for images .* this batch has \['"):
        sets = pad_sets(AboveMeanSets(4, 3, 5, seed=0).items)
        forward_task(VectorEncoder(2, 16), bb, SequenceHead(16, 2), sets, test_time_flip=True)
