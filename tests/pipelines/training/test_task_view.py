"""TaskView: one task of a MultiTaskModule behaves like a single-task model."""

from __future__ import annotations

import torch

from vecset.backbone import Backbone
from vecset.encoders import VectorEncoder
from vecset.encoders.collate import pad_sets
from vecset.heads import LabelingHead, SequenceHead
from vecset.pipelines.data.synthetic import AboveMeanSets
from vecset.pipelines.reports.outputs import inference
from vecset.pipelines.training.multitask import MultiTaskModule


def make_model() -> MultiTaskModule:
    torch.manual_seed(0)
    return MultiTaskModule(
        backbone=Backbone(d_model=16, depth=1, heads=2, dropout=0.5),
        encoders={"above": VectorEncoder(2, 16), "mean": VectorEncoder(2, 16)},
        heads={"above": LabelingHead(16, 2), "mean": SequenceHead(16, 1, task="regression")},
    )


def test_view_is_the_task_of_the_multitask_model():
    model = make_model().eval()
    view = model.task_view("mean")
    assert view.encoder is model.encoders["mean"] and view.head is model.heads["mean"]
    assert view.backbone is model.backbone and view.device == model.device
    batch = pad_sets(AboveMeanSets(6, 3, 5, seed=1, target="mean").items)
    torch.testing.assert_close(view(batch), model("mean", batch))
    # its parameters: the shared backbone and this task's encoder and head, each once
    own = {id(p) for m in (model.backbone, model.encoders["mean"], model.heads["mean"]) for p in m.parameters()}
    assert {id(p) for p in view.parameters()} == own
    assert not any(id(p) in own for p in model.encoders["above"].parameters())


def test_view_modes_touch_only_its_task_and_are_restored():
    model = make_model().train()
    view = model.task_view("above")
    assert view.training
    view.eval()
    assert not model.backbone.training and not model.encoders["above"].training and not model.heads["above"].training
    assert model.encoders["mean"].training and model.heads["mean"].training  # the other task is left alone
    view.train()
    before = [m.training for m in model.modules()]
    with inference(view):
        assert not model.heads["above"].training and model.heads["mean"].training
    assert [m.training for m in model.modules()] == before
