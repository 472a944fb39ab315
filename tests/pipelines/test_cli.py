"""The vecset CLI end to end on the debug config: fit, results.json, reload, predict."""

import contextlib
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from pytorch_lightning.callbacks import ModelCheckpoint

from vecset.pipelines.cli import config_name, run_cli
from vecset.pipelines.training.run_folders import claim_version
from vecset.pipelines.training.task import TaskModule, warmup_cosine

ROOT = Path(__file__).resolve().parents[2]
DEBUG = str(ROOT / "configs" / "debug.yaml")


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    run_root = tmp_path_factory.mktemp("cli")
    with contextlib.chdir(run_root):
        # 3 of the config's 12 epochs: past 0.95 after the first (0.978 at epoch 0 in a full run)
        run_cli(["fit", "--config", DEBUG, "--trainer.enable_progress_bar=false", "--trainer.max_epochs=3"])
    return run_root / "runs" / "debug" / "version_0"


def test_fit_writes_results_and_reaches_accuracy(fitted, capsys):
    results = json.loads((fitted / "results.json").read_text())
    assert results["test"]["test_acc"] >= 0.95
    assert results["best_val"] >= 0.95
    assert Path(results["checkpoint"]).exists() and Path(results["last_checkpoint"]).exists()
    assert Path(results["config"]).exists()
    assert (fitted / "metrics.csv").exists()
    assert any(p.endswith("curves.png") for p in results["plots"])
    assert results["epochs"] == 3 and results["wall_seconds"] > 0
    assert results["setup_seconds"] + results["train_seconds"] == pytest.approx(results["wall_seconds"], abs=0.02)


def test_results_tell_the_data_setup_from_training(tmp_path, monkeypatch):
    import time

    from vecset.pipelines.data.synthetic import SyntheticSetDataModule

    real = SyntheticSetDataModule.setup
    monkeypatch.setattr(SyntheticSetDataModule, "setup", lambda self, stage=None: (time.sleep(1.5), real(self, stage))[1])
    monkeypatch.chdir(tmp_path)
    run_cli(["fit", "--config", DEBUG, "--trainer.enable_progress_bar=false", "--trainer.max_epochs=1"])
    results = json.loads((tmp_path / "runs" / "debug" / "version_0" / "results.json").read_text())
    assert results["setup_seconds"] >= 1.5  # the slow setup is counted before training starts
    assert results["train_seconds"] < results["wall_seconds"] - 1.5


def test_checkpoint_reloads_the_same_model(fitted):
    results = json.loads((fitted / "results.json").read_text())
    model = TaskModule.load_from_checkpoint(results["checkpoint"], map_location="cpu").eval()
    assert type(model.backbone).__name__ == "Backbone" and len(model.backbone.blocks) == 2
    # the checkpoint holds only plain data: it loads without unpickling code
    ckpt = torch.load(results["checkpoint"], map_location="cpu", weights_only=True)
    model2 = TaskModule.load_from_checkpoint(results["checkpoint"], map_location="cpu").eval()
    batch = {"x": torch.randn(2, 5, 2), "mask": torch.ones(2, 5, dtype=torch.bool), "ids": torch.arange(2)}
    torch.testing.assert_close(model(batch), model2(batch))
    assert "state_dict" in ckpt


def test_predict_writes_predictions(fitted, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    ckpt = fitted / "checkpoints" / "last.ckpt"
    run_cli(["predict", "--config", DEBUG, "--ckpt_path", str(ckpt), "--trainer.enable_progress_bar=false"])
    out = capsys.readouterr().out
    path = tmp_path / "runs" / "debug" / "version_0" / "predictions.csv"
    assert "predictions: runs/debug/version_0/predictions.csv" in out
    rows = list(csv.DictReader(open(path)))
    assert len(rows) == 200  # the test split
    labels = rows[0]["prediction"].split()
    assert set(labels) <= {"below", "above"} and len(labels) == len(rows[0]["probability"].split())


def test_predict_with_a_runs_own_config_is_named_after_the_job(fitted, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run_cli(["predict", "--config", str(fitted / "config.yaml"), "--ckpt_path", str(fitted / "checkpoints" / "last.ckpt"),
             "--trainer.enable_progress_bar=false"])
    assert "predictions: runs/debug/version_0/predictions.csv" in capsys.readouterr().out
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["debug"]  # not runs/config


def test_only_predict_gets_the_prediction_writer(fitted, tmp_path, monkeypatch):
    """The writer plans predict's reading at setup: a fit or test run has none (a CLI built with
    run=False may run anything, so it has one)."""
    from vecset.pipelines.predict import PredictionWriter

    monkeypatch.chdir(tmp_path)
    ckpt = str(fitted / "checkpoints" / "last.ckpt")
    quiet = ["--trainer.enable_progress_bar=false", "--trainer.logger=false", "--plots=false"]
    writers = {sub: sum(isinstance(c, PredictionWriter) for c in run_cli([sub, "--config", DEBUG, "--ckpt_path", ckpt,
                                                                            *quiet]).trainer.callbacks)
               for sub in ("test", "predict")}
    writers[None] = sum(isinstance(c, PredictionWriter)
                        for c in run_cli(["--config", DEBUG, *quiet[:2]], run=False).trainer.callbacks)
    assert writers == {"test": 0, "predict": 1, None: 1}


def test_config_name_and_versions(tmp_path):
    assert config_name(["fit", "--config", "configs/digits.yaml"]) == "digits"
    # the first config is the job's, a second one an overlay (issue 57: runs/lrf/ for a job's LR finder run)
    assert config_name(["fit", "--config=a/b.yaml", "-c", "x/lrf.yaml"]) == "b"
    assert config_name(["fit", "-c", "configs/digits.yaml", "--config", "lrf.yaml"]) == "digits"
    assert config_name(["fit"]) == "default"
    # a saved run's config is that job's, not "config"
    assert config_name(["predict", "--config", "runs/digits/version_3/config.yaml"]) == "digits"
    assert config_name(["predict", "--config=/abs/runs/g2p/version_0/config.yaml"]) == "g2p"
    assert config_name(["fit", "--config", "exp/version_2.yaml"]) == "version_2"
    (tmp_path / "version_0").mkdir()
    (tmp_path / "version_3").mkdir()
    assert claim_version(tmp_path) == 4 and (tmp_path / "version_4").is_dir()


def test_warmup_cosine_schedule():
    assert warmup_cosine(0, 100, 10) == pytest.approx(0.1)
    assert warmup_cosine(9, 100, 10) == pytest.approx(1.0)
    assert warmup_cosine(55, 100, 10) == pytest.approx(0.5)
    assert warmup_cosine(100, 100, 10) == pytest.approx(0.0)


def test_no_checkpoints_when_checkpointing_is_off(tmp_path, monkeypatch):
    import pytorch_lightning as pl

    from vecset.backbone import Backbone
    from vecset.encoders import VectorEncoder
    from vecset.heads import LabelingHead
    from vecset.pipelines import SyntheticSetDataModule

    monkeypatch.chdir(tmp_path)
    model = TaskModule(VectorEncoder(2, 16), Backbone(16, 1, 2), LabelingHead(16, 2))
    trainer = pl.Trainer(max_steps=2, enable_checkpointing=False, logger=False, enable_progress_bar=False)
    trainer.fit(model, SyntheticSetDataModule(n_train=64, n_val=32, n_test=32))
    assert trainer.checkpoint_callbacks == [] and list(tmp_path.iterdir()) == []


def test_a_configured_nonfinite_guard_replaces_the_default(tmp_path, monkeypatch):
    from vecset.pipelines.training.callbacks import NonFiniteGuard

    monkeypatch.chdir(tmp_path)
    guard = '{"class_path": "vecset.pipelines.training.callbacks.NonFiniteGuard", "init_args": {"check_inputs": false}}'
    for extra, expected in (([], [(True, True)]), ([f"--trainer.callbacks=[{guard}]"], [(False, True)])):
        cli = run_cli(["--config", DEBUG, "--trainer.enable_progress_bar=false", *extra], run=False)
        guards = [c for c in cli.trainer.callbacks if isinstance(c, NonFiniteGuard)]
        assert [(g.check_inputs, g.check_loss) for g in guards] == expected


def tiny_config(tmp_path: Path, config: str, lr: float | None = None, callbacks: list | None = None, **trainer) -> Path:
    """configs/<config> (same file name, so the same run name) with 4 training steps per epoch
    (256 training sets of batch 64, for every task) and the given trainer settings."""
    cfg = yaml.safe_load((ROOT / "configs" / config).read_text())
    cfg["trainer"].update(enable_progress_bar=False, enable_model_summary=False, log_every_n_steps=1, **trainer)
    cfg["trainer"]["callbacks"] = callbacks or []
    if lr is not None:
        cfg["model"]["init_args"]["lr"] = lr
    data = cfg["data"]["init_args"]
    for dm in data["tasks"].values() if "tasks" in data else [cfg["data"]]:
        dm["init_args"].update(n_train=256, n_val=64, n_test=64, batch_size=64)
    path = tmp_path / config
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.parametrize(("config", "trainer", "final_step", "best_step"), [
    ("debug.yaml", {"max_epochs": 3}, 12, 4),
    ("debug.yaml", {"max_steps": 6}, 6, 4),  # fit ends in the middle of epoch 1
    ("debug.yaml", {"max_epochs": 3, "check_val_every_n_epoch": 2}, 12, 8),  # no validation after epoch 2
    ("debug_multitask.yaml", {"max_epochs": 3}, 12, 4),
])
def test_last_checkpoint_holds_the_final_step(tmp_path, monkeypatch, config, trainer, final_step, best_step):
    """lr 0: the weights never change, so the validation metric never improves after the first
    validation (ModelCheckpoint counts only a strict improvement) and the best checkpoint stays
    there; last.ckpt must still be the state at the end of fit."""
    monkeypatch.chdir(tmp_path)
    cli = run_cli(["fit", "--config", str(tiny_config(tmp_path, config, lr=0.0, **trainer)), "--plots=false"])
    run = tmp_path / "runs" / Path(config).stem / "version_0"
    last = torch.load(run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert last["global_step"] == cli.trainer.global_step == final_step
    results = json.loads((run / "results.json").read_text())
    assert results["last_checkpoint"] == str((run / "checkpoints" / "last.ckpt").resolve())
    assert results["global_steps"] == final_step
    best = torch.load(results["checkpoint"], map_location="cpu", weights_only=True)
    assert best["global_step"] == best_step
    # after fit and test (which attaches the model's callbacks again): the best and the last
    # checkpoint, each once, both plain ModelCheckpoints. Lightning replaces the trainer's
    # callbacks by type, iterating a set of types: a subclass next to ModelCheckpoint was kept
    # twice or once depending on that order, which differs between processes (a DDP hang)
    assert [type(c) for c in cli.trainer.checkpoint_callbacks] == [ModelCheckpoint, ModelCheckpoint]
    assert [c.monitor for c in cli.trainer.checkpoint_callbacks] == [results["monitor"], None]


# what Lightning prints on a first run that does not apply to one (advertising, a warning
# about a log folder that the run itself had just filled, a save without weights_only)
NOISE = ("exists and is not empty", "will be deleted", "Tip:", "litlogger", "litmodels", "not resumable",
         "`weights_only` was not set", "will override existing callbacks", "LeafSpec")


def test_a_first_debug_fit_prints_nothing_alarming(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    # configs/debug.yaml itself (its StepCheckpoint included), on less data
    cmd = [sys.executable, "-m", "vecset", "fit", "--config", DEBUG, "--plots=false", "--trainer.max_epochs=2",
           "--data.init_args.n_train=256", "--data.init_args.n_val=64", "--data.init_args.n_test=64",
           "--trainer.callbacks.init_args.every_n_train_steps=3"]
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout + r.stderr
    assert "Trainer.fit` stopped: `max_epochs=2` reached" in out  # Lightning's output is there
    assert (tmp_path / "runs/debug/version_0/checkpoints/last-step.ckpt").exists()
    assert [line for line in out.splitlines() if any(n in line for n in NOISE)] == []
