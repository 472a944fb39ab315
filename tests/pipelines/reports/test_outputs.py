"""Running a model for a report: the batch moved to the device, eval mode and no grad, every
module's training mode restored, and the test outputs the head scores."""

from __future__ import annotations

import pytest
import torch

from vecset.backbone import Backbone
from vecset.encoders import VectorEncoder
from vecset.heads import LabelingHead
from vecset.pipelines import SyntheticSetDataModule, TaskModule
from vecset.pipelines.reports.outputs import collect_test_outputs, inference, to_device


def _model(dropout: float = 0.0) -> TaskModule:
    torch.manual_seed(0)
    return TaskModule(VectorEncoder(2, 16), Backbone(16, depth=1, heads=2, dropout=dropout), LabelingHead(16, 2))


def test_to_device_moves_nested_tensors_and_leaves_other_values():
    batch = {"x": torch.ones(2, 3), "text": [["a", "b"]], "nested": {"ids": torch.arange(2)}, "n": 3}
    moved = to_device(batch, "meta")
    assert moved["x"].is_meta and moved["nested"]["ids"].is_meta
    assert moved["text"] == [["a", "b"]] and moved["n"] == 3
    assert not batch["x"].is_meta  # the caller's batch is untouched


@pytest.mark.parametrize("training", [True, False])
def test_inference_restores_every_modules_mode(training):
    model = _model().train(training)
    model.backbone.eval()  # e.g. a frozen backbone kept in eval while the rest trains
    before = [m.training for m in model.modules()]
    with inference(model):
        assert not any(m.training for m in model.modules()) and not torch.is_grad_enabled()
    assert [m.training for m in model.modules()] == before and torch.is_grad_enabled()
    with pytest.raises(RuntimeError, match="boom"), inference(model):
        raise RuntimeError("boom")
    assert [m.training for m in model.modules()] == before


def test_collected_outputs_are_what_the_head_scores_in_eval_mode():
    dm = SyntheticSetDataModule(n_train=8, n_val=8, n_test=40, batch_size=16)
    dm.setup("test")
    model = _model(dropout=0.5).train()  # in training mode, dropout would change the labels
    outs = collect_test_outputs(model, dm.test_dataloader())
    assert model.training
    assert [len(o.batch["ids"]) for o in outs] == [16, 16, 8]
    model.eval()
    with torch.no_grad():
        for o in outs:
            want = model(o.batch).argmax(-1).flatten()
            assert torch.equal(o.pred, want) and torch.equal(o.target, o.batch["y"].flatten())
