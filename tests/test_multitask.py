"""Multi-task: one shared Backbone, every task's loss moves it, prefixed metrics, fine-tuning."""

import json
import os
from pathlib import Path

import pytest
import torch

from backbone import Backbone
from encoders import VectorEncoder
from heads import LabelingHead, SequenceHead
from pipelines.cli import run_cli
from pipelines.collate import pad_sets
from pipelines.multitask import MultiTaskModule, shared_backbone_grads
from pipelines.synthetic import AboveMeanSets
from pipelines.task import TaskModule

ROOT = Path(__file__).resolve().parents[1]


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


def test_task_table_shows_this_run_only():
    """The summary after a multi-task fit: this run's test metrics per task, nothing measured
    by another run (bench/results/multitask.json was another number of steps)."""
    from pipelines.multitask import task_table

    rows, text = task_table({"above/test_acc": 0.91, "above/test_loss": 0.3, "mean/test_rmse": 0.2},
                            ["above", "mean"])
    assert rows == [{"task": "above", "metric": "test_acc", "value": 0.91},
                    {"task": "mean", "metric": "test_rmse", "value": 0.2}]
    assert text.splitlines() == [f"{'task':10s} {'metric':10s} {'this run':>10s}",
                                 f"{'above':10s} {'test_acc':10s} {0.91:10.4f}",
                                 f"{'mean':10s} {'test_rmse':10s} {0.2:10.4f}"]


def test_pipelines_never_read_benchmark_output():
    """bench/ writes results that nothing in the packages reads (DESIGN.md): no import of bench,
    no path into it."""
    import ast

    for path in sorted((ROOT / "pipelines").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] == "bench" for a in node.names), path
            elif isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] != "bench", path
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert node.value != "bench" and not node.value.startswith("bench/"), f"{path}:{node.lineno}"
