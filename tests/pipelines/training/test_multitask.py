"""Multi-task: one shared Backbone, every task's loss moves it, prefixed metrics, fine-tuning."""

import json
import os
from pathlib import Path

import pytest
import torch

from vecset.backbone import Backbone
from vecset.encoders import VectorEncoder
from vecset.heads import LabelingHead, SequenceHead
from vecset.pipelines.cli import run_cli
from vecset.pipelines.data.collate import pad_sets
from vecset.pipelines.data.synthetic import AboveMeanSets
from vecset.pipelines.training.multitask import MultiTaskModule, shared_backbone_grads
from vecset.pipelines.training.task import TaskModule

ROOT = Path(__file__).resolve().parents[3]


def make_model() -> MultiTaskModule:
    torch.manual_seed(0)
    return MultiTaskModule(
        backbone=Backbone(d_model=16, depth=1, heads=2),
        encoders={"above": VectorEncoder(2, 16), "mean": VectorEncoder(2, 16)},
        heads={"above": LabelingHead(16, 2), "mean": SequenceHead(16, 1, task="regression")},
    )


def batches() -> dict:
    return {"above": pad_sets(AboveMeanSets(8, 3, 6, seed=0).items),
            "mean": pad_sets(AboveMeanSets(8, 3, 6, seed=1, target="mean").items)}


def test_one_backbone_shared_and_moved_by_every_task():
    model = make_model()
    backbone_ids = {id(p) for p in model.backbone.parameters()}
    all_ids = [id(p) for p in model.parameters()]
    assert len(all_ids) == len(set(all_ids))  # each parameter once: no copy per task
    assert backbone_ids <= set(all_ids)
    norms = shared_backbone_grads(model, batches())
    assert set(norms) == {"above", "mean"} and all(n > 0 for n in norms.values())
    # a step on one task alone changes the shared weights
    before = [p.detach().clone() for p in model.backbone.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    b = batches()["mean"]
    model.heads["mean"].loss(model("mean", b), b).backward()
    opt.step()
    assert any(not torch.equal(a, p) for a, p in zip(before, model.backbone.parameters(), strict=True))


def test_mismatched_task_names_are_rejected():
    with pytest.raises(ValueError, match="must name the same tasks"):
        MultiTaskModule(Backbone(16, 1, 2), {"a": VectorEncoder(2, 16)}, {"b": LabelingHead(16, 2)})


@pytest.fixture(scope="module")
def multitask_run(tmp_path_factory):
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("mt"))
    try:
        run_cli(["fit", "--config", str(ROOT / "configs" / "debug_multitask.yaml"),
                 "--trainer.enable_progress_bar=false", "--trainer.max_epochs=3", "--plots=false"])
        return Path.cwd() / "runs" / "debug_multitask" / "version_0"
    finally:
        os.chdir(cwd)


def test_multitask_cli_logs_prefixed_metrics(multitask_run):
    res = json.loads((multitask_run / "results.json").read_text())
    assert {"above/test_acc", "mean/test_rmse", "mean/test_mae", "test_loss"} <= set(res["test"])
    assert res["test"]["above/test_acc"] > 0.8
    assert res["monitor"] == "val_loss"
    # --plots=false: no curves, no task's report (tests/pipelines/reports/test_callback.py has them)
    assert "plots" not in res and not (multitask_run / "curves.png").exists()
    assert not (multitask_run / "above").exists() and not (multitask_run / "mean").exists()


def test_finetune_from_multitask_backbone(multitask_run):
    ckpt = json.loads((multitask_run / "results.json").read_text())["checkpoint"]
    state = torch.load(ckpt, map_location="cpu", weights_only=True)["state_dict"]
    bb = Backbone(d_model=32, depth=2, heads=4, mlp_ratio=2.0)
    model = TaskModule(VectorEncoder(2, 32), bb, LabelingHead(32, 2), backbone_ckpt=ckpt, freeze_backbone=True)
    torch.testing.assert_close(model.backbone.blocks[0].attn.in_proj.weight,
                               state["backbone.blocks.0.attn.in_proj.weight"])
    assert not any(p.requires_grad for p in model.backbone.parameters())
    assert all(p.requires_grad for p in model.head.parameters())
    with pytest.raises(ValueError, match="does not match the configured one"):
        TaskModule(VectorEncoder(2, 32), Backbone(d_model=32, depth=3, heads=4, mlp_ratio=2.0),
                   LabelingHead(32, 2), backbone_ckpt=ckpt)
    with pytest.raises(ValueError, match="freeze_backbone=True needs backbone_ckpt"):
        TaskModule(VectorEncoder(2, 32), Backbone(32), LabelingHead(32, 2), freeze_backbone=True)


def test_task_table_quotes_single_task_reference(tmp_path):
    from vecset.pipelines.training.multitask import task_table

    ref = tmp_path / "multitask.json"
    ref.write_text(json.dumps({"steps": 400, "rows": [
        {"task": "above", "metric": "test_acc", "multitask": 0.9, "single_task": 0.95}]}))
    rows, text = task_table({"above/test_acc": 0.91, "above/test_loss": 0.3, "mean/test_rmse": 0.2},
                            ["above", "mean"], ref)
    assert rows == [
        {"task": "above", "metric": "test_acc", "value": 0.91, "single_task": 0.95, "single_task_multitask": 0.9},
        {"task": "mean", "metric": "test_rmse", "value": 0.2, "single_task": None, "single_task_multitask": None},
    ]
    assert "0.9500" in text and "400 steps" in text
