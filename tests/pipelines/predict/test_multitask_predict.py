"""``vecset predict`` with a multi-task checkpoint: the data's ``predict_task`` names the task,
whose inputs are predicted by the shared backbone with that task's encoder and head."""

from __future__ import annotations

import contextlib
import csv
from pathlib import Path

import pytest
import torch

from vecset.encoders.collate import pad_sets
from vecset.pipelines.cli import run_cli
from vecset.pipelines.data.synthetic import SyntheticSetDataModule
from vecset.pipelines.training.multitask import MultiTaskDataModule, MultiTaskModule

ROOT = Path(__file__).resolve().parents[3]
CONFIG = str(ROOT / "configs" / "debug_multitask.yaml")
QUIET = ["--trainer.enable_progress_bar=false", "--trainer.logger=false"]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("mt_predict")
    with contextlib.chdir(d):
        run_cli(["fit", "--config", CONFIG, "--trainer.enable_progress_bar=false", "--trainer.max_epochs=1",
                 "--plots=false", "--trainer.limit_train_batches=3", "--trainer.limit_val_batches=1"])
    return next((d / "runs").rglob("last.ckpt"))


def predict(ckpt: Path, cwd: Path, *args: str) -> list[dict]:
    with contextlib.chdir(cwd):
        run_cli(["predict", "--config", CONFIG, "--ckpt_path", str(ckpt), *QUIET, *args])
    with open(cwd / "predictions.csv") as f:
        return list(csv.DictReader(f))


def test_predict_with_a_multitask_checkpoint_on_one_tasks_inputs(fitted, tmp_path):
    rows = predict(fitted, tmp_path, "--data.init_args.predict_task", "mean", f"--trainer.default_root_dir={tmp_path}")
    model = MultiTaskModule.load_from_checkpoint(str(fitted), map_location="cpu").eval()
    test = SyntheticSetDataModule(n_train=600, n_val=200, n_test=200, batch_size=64, target="mean", seed=10)
    test.setup("test")  # the config's "mean" task: predict reads its test split
    batch = pad_sets(list(test.sets["test"]))
    with torch.no_grad():
        want = model.heads["mean"].predict(model("mean", batch), batch)["value"]  # the model's own output
    assert len(rows) == 200 and list(rows[0]) == ["input", "mean"]
    assert [r["input"] for r in rows] == [str(i) for i in batch["ids"].tolist()]
    assert [float(r["mean"]) for r in rows] == pytest.approx([v[0] for v in want], rel=1e-5, abs=1e-6)
    # the other task: a label per vector, through its own head
    rows = predict(fitted, tmp_path, "--data.init_args.predict_task", "above", f"--trainer.default_root_dir={tmp_path}")
    assert list(rows[0]) == ["input", "prediction", "probability"]
    assert len(rows) == 200 and set(rows[0]["prediction"].split()) <= {"below", "above"}


def test_the_task_must_be_named_when_there_are_several(fitted, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:  # a setting the run finds wrong: its one line, exit 2
        predict(fitted, tmp_path, f"--trainer.default_root_dir={tmp_path}")
    assert e.value.code == 2 and capsys.readouterr().err.startswith(
        "error: vecset predict with a multi-task model runs one task: name it with --data.init_args.predict_task "
        "(one of ['above', 'mean'])")
    with pytest.raises(ValueError, match=r"predict_task 'median' is not one of the tasks \['a'\]"):
        MultiTaskDataModule({"a": SyntheticSetDataModule()}, predict_task="median")


def test_only_the_predicted_task_reads_its_inputs():
    dm = MultiTaskDataModule({"a": SyntheticSetDataModule(n_test=3), "b": SyntheticSetDataModule(n_test=5)},
                             predict_task="b")
    dm.setup("predict")
    assert dm.tasks["a"].sets == {} and len(dm.tasks["b"].sets["test"]) == 5
    assert len(dm.predict_dataloader().dataset) == 5
    single = MultiTaskDataModule({"a": SyntheticSetDataModule(n_test=3)})
    assert single.predict_task_name() == "a"  # one task: it need not be named
