"""Multi-task: one shared Backbone, every task's loss moves it, prefixed metrics, fine-tuning."""

import contextlib
import csv
import json
from pathlib import Path

import pytest
import torch
import yaml

from vecset.backbone import Backbone
from vecset.encoders import VectorEncoder
from vecset.encoders.collate import pad_sets
from vecset.heads import LabelingHead, SequenceHead
from vecset.pipelines.cli import run_cli
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
    with contextlib.chdir(tmp_path_factory.mktemp("mt")):
        run_cli(["fit", "--config", str(ROOT / "configs" / "debug_multitask.yaml"),
                 "--trainer.enable_progress_bar=false", "--trainer.max_epochs=3", "--plots=false",
                 "--model.init_args.task_checkpoints=true"])
        return Path.cwd() / "runs" / "debug_multitask" / "version_0"


def test_task_checkpoints_keep_each_tasks_best_epoch_by_its_own_validation_metric(multitask_run):
    with open(multitask_run / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for task, metric, pick in (("above", "val_acc", max), ("mean", "val_rmse", min)):
        scores = {int(r["epoch"]): float(r[f"{task}/{metric}"]) for r in rows if r.get(f"{task}/{metric}")}
        assert len(scores) == 3
        (ckpt,) = (multitask_run / "checkpoints").glob(f"best-{task}-epoch*.ckpt")
        assert int(ckpt.stem.rsplit("epoch", 1)[1]) == pick(scores, key=scores.get)


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


def test_task_table_shows_this_run_only():
    """The summary after a multi-task fit: this run's test metrics per task, nothing measured
    by another run (bench/results/multitask.json was another number of steps)."""
    from vecset.pipelines.training.multitask import task_table

    rows, text = task_table({"above/test_acc": 0.91, "above/test_loss": 0.3, "mean/test_rmse": 0.2},
                            ["above", "mean"])
    assert rows == [{"task": "above", "metric": "test_acc", "value": 0.91},
                    {"task": "mean", "metric": "test_rmse", "value": 0.2}]
    assert text.splitlines() == [f"{'task':10s} {'metric':10s} {'this run':>10s}",
                                 f"{'above':10s} {'test_acc':10s} {0.91:10.4f}",
                                 f"{'mean':10s} {'test_rmse':10s} {0.2:10.4f}"]


def test_pipelines_never_read_benchmark_output():
    """bench/ writes results that nothing in the packages reads (the layout in docs/architecture.md): no import of bench,
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


def train_losses(metrics_csv: Path, key: str) -> list[float]:
    with open(metrics_csv) as f:
        return [float(r[key]) for r in csv.DictReader(f) if r.get(key)]


def test_g2p_trains_beside_the_set_task(tmp_path, monkeypatch):
    """configs/g2p_debug.yaml's encoder, head and data beside configs/debug.yaml's task, in one
    MultiTaskModule on debug.yaml's backbone: the seq2seq head gets the batch (teacher
    forcing), its vocabulary from the hand-over, and its loss falls."""
    g2p = yaml.safe_load((ROOT / "configs" / "g2p_debug.yaml").read_text())["model"]["init_args"]
    sets = yaml.safe_load((ROOT / "configs" / "debug.yaml").read_text())
    g2p_data = yaml.safe_load((ROOT / "configs" / "g2p_debug.yaml").read_text())["data"]
    sets_data = sets["data"] | {"init_args": sets["data"]["init_args"] | {"n_train": 320}}  # 5 batches
    model = sets["model"]["init_args"]
    cfg = {
        "seed_everything": 0,
        "trainer": {"max_steps": 30, "accelerator": "cpu", "devices": 1, "log_every_n_steps": 1,
                    "enable_progress_bar": False, "enable_model_summary": False},
        "model": {"class_path": "vecset.pipelines.MultiTaskModule", "init_args": {
            "backbone": model["backbone"], "lr": 0.003,
            "encoders": {"g2p": g2p["encoder"], "sets": model["encoder"]},
            "heads": {"g2p": g2p["head"], "sets": model["head"]}}},
        "data": {"class_path": "vecset.pipelines.MultiTaskDataModule",
                 "init_args": {"tasks": {"g2p": g2p_data, "sets": sets_data}}},
    }
    path = tmp_path / "g2p_multitask.yaml"
    path.write_text(yaml.safe_dump(cfg))
    monkeypatch.chdir(tmp_path)
    run_cli(["fit", "--config", str(path), "--plots=false"])
    run = tmp_path / "runs" / "g2p_multitask" / "version_0"
    losses = train_losses(run / "metrics.csv", "g2p/train_loss_step")
    assert len(losses) == 30
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.9 * first, (first, last)  # seeded: 3.56 -> 3.06
    test = json.loads((run / "results.json").read_text())["test"]
    assert 0 <= test["g2p/test_per"] <= 1.5 and test["sets/test_acc"] > 0.6


def test_kernel_regression_trains_beside_the_set_task(tmp_path):
    """The Nadaraya-Watson head reads its queries and values from the batch: in a multi-task
    run (here with no trunk, ``nn.Identity``, as in configs/kernel_regression.yaml) it learns
    its kernel width as it does alone."""
    import pytorch_lightning as pl
    from pytorch_lightning.loggers import CSVLogger
    from torch import nn

    from vecset.encoders import PointEncoder
    from vecset.heads import NadarayaWatsonHead
    from vecset.pipelines.data.synthetic import SyntheticSetDataModule
    from vecset.pipelines.kernel_regression.data import KernelRegressionDataModule
    from vecset.pipelines.training.multitask import MultiTaskDataModule

    pl.seed_everything(0)
    model = MultiTaskModule(nn.Identity(), {"kreg": PointEncoder(), "sets": VectorEncoder(2, 8)},
                            {"kreg": NadarayaWatsonHead(), "sets": LabelingHead(8, 2)},
                            lr=0.5, weight_decay=0.0, warmup=0.0)
    dm = MultiTaskDataModule({"kreg": KernelRegressionDataModule(seed=0),
                              "sets": SyntheticSetDataModule(n_train=100, n_val=20, n_test=20, batch_size=50)})
    trainer = pl.Trainer(max_steps=20, accelerator="cpu", devices=1, logger=CSVLogger(tmp_path), log_every_n_steps=1,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, dm)
    losses = train_losses(Path(trainer.logger.log_dir) / "metrics.csv", "kreg/train_loss_step")
    assert len(losses) == 20 and losses[-1] < 0.9 * losses[0], losses
    assert model.heads["kreg"].width.item() != 1.0


def test_a_task_whose_widths_do_not_fit_the_shared_backbone_is_named_before_any_step():
    """A kernel-regression task (raw scalar keys, width 1) beside a shared Backbone of width 32:
    refused when the model is built, naming the task, not at that task's first step."""
    from vecset.encoders import PointEncoder
    from vecset.heads import NadarayaWatsonHead

    with pytest.raises(ValueError, match=r"task 'kreg': the encoder PointEncoder returns vectors of width 1, "
                                         r"but the backbone Backbone expects d_model=32"):
        MultiTaskModule(Backbone(32, 1, 2), {"sets": VectorEncoder(2, 32), "kreg": PointEncoder()},
                        {"sets": LabelingHead(32, 2), "kreg": NadarayaWatsonHead()})
    with pytest.raises(ValueError, match=r"task 'sets': the head LabelingHead reads vectors of width 16, "
                                         r"but the backbone Backbone returns width 32"):
        MultiTaskModule(Backbone(32, 1, 2), {"sets": VectorEncoder(2, 32)}, {"sets": LabelingHead(16, 2)})
    with pytest.raises(ValueError, match=r"^the encoder VectorEncoder returns vectors of width 8, but the head "
                                         r"LabelingHead reads width 16 \(the backbone Identity"):
        TaskModule(VectorEncoder(2, 8), torch.nn.Identity(), LabelingHead(16, 2))


def test_kernel_regression_config_beside_debug_multitask_fails_at_setup_naming_the_task(tmp_path, monkeypatch, capsys):
    """configs/kernel_regression.yaml's task added to configs/debug_multitask.yaml: the run stops
    before training with the task's name (it used to stop mid-run with 'Backbone expects
    vectors of width d_model=32, got 1')."""
    cfg = yaml.safe_load((ROOT / "configs" / "debug_multitask.yaml").read_text())
    kreg = yaml.safe_load((ROOT / "configs" / "kernel_regression.yaml").read_text())
    cfg["model"]["init_args"]["encoders"]["kreg"] = kreg["model"]["init_args"]["encoder"]
    cfg["model"]["init_args"]["heads"]["kreg"] = kreg["model"]["init_args"]["head"]
    cfg["data"]["init_args"]["tasks"]["kreg"] = kreg["data"]
    path = tmp_path / "mt_kreg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        run_cli(["fit", "--config", str(path), "--plots=false", "--trainer.enable_progress_bar=false"])
    first = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("error:"))
    assert first.startswith("error: model (vecset.pipelines.MultiTaskModule): task 'kreg': the encoder PointEncoder "
                            "returns vectors of width 1"), first
    assert not (tmp_path / "runs" / "mt_kreg" / "version_0" / "metrics.csv").exists()


def test_the_test_table_shows_each_task_loss_under_its_own_dataloader_only(capsys):
    """Lightning attributes what is logged in ``on_test_epoch_end`` to every dataloader: each
    task's loss is logged from its own test steps instead, so the printed table (and
    ``trainer.test``'s per-dataloader results) has it under that task's column only, with the
    same value as the epoch mean the weighted ``test_loss`` sums."""
    import pytorch_lightning as pl

    from vecset.pipelines.data.synthetic import SyntheticSetDataModule
    from vecset.pipelines.training.multitask import MultiTaskDataModule

    model = make_model()
    dm = MultiTaskDataModule({  # 20 and 12 test sets in batches of 8: uneven last batches
        "above": SyntheticSetDataModule(n_train=8, n_val=8, n_test=20, batch_size=8),
        "mean": SyntheticSetDataModule(n_train=8, n_val=8, n_test=12, batch_size=8, target="mean", seed=10)})
    trainer = pl.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    capsys.readouterr()
    res = trainer.test(model, dm)
    table = {}
    for line in capsys.readouterr().out.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 3 and "/" in cells[0] or cells[:1] == ["test_loss"]:
            table[cells[0]] = cells[1:]
    assert table["above/test_loss"][1] == "" and table["above/test_loss"][0] != ""
    assert table["mean/test_loss"][0] == "" and table["mean/test_loss"][1] != ""
    assert table["above/test_acc"][1] == "" and table["mean/test_rmse"][0] == ""
    assert set(res[0]) == {"above/test_acc", "above/test_loss", "test_loss"}
    assert set(res[1]) == {"mean/test_rmse", "mean/test_mae", "mean/test_loss", "test_loss"}
    # the per-task epoch means (batch-size weighted) are what the total adds up
    assert res[0]["test_loss"] == pytest.approx(res[0]["above/test_loss"] + res[1]["mean/test_loss"], rel=1e-6)
    with torch.no_grad():  # and they are the means over the test sets, not over batches
        ref = {}
        for t, loader in (("above", dm.tasks["above"].test_dataloader()), ("mean", dm.tasks["mean"].test_dataloader())):
            tot = n = 0
            for b in loader:
                tot += float(model.heads[t].loss(model(t, b), b)) * len(b["ids"])
                n += len(b["ids"])
            ref[t] = tot / n
    assert res[0]["above/test_loss"] == pytest.approx(ref["above"], rel=1e-5)
    assert res[1]["mean/test_loss"] == pytest.approx(ref["mean"], rel=1e-5)
