"""docs/configs.md's early stopping and learning-rate finder recipes, run from the CLI on a
tiny debug config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pytorch_lightning.callbacks import Callback

from vecset.pipelines.cli import VecsetCLI, run_cli
from vecset.pipelines.training.task import warmup_cosine

ORIGINAL = VecsetCLI._instantiate_trainer

ROOT = Path(__file__).resolve().parents[3]
SMALL = ["--trainer.enable_progress_bar=false", "--plots=false", "--data.init_args.n_train=256",
         "--data.init_args.n_val=64", "--data.init_args.n_test=64", "--data.init_args.batch_size=16"]


def config_with(tmp_path: Path, callback: dict) -> str:
    config = yaml.safe_load((ROOT / "configs" / "debug.yaml").read_text())
    config["trainer"]["callbacks"].append(callback)
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_early_stopping_stops_the_fit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # min_delta 1: no epoch improves val_acc by a whole unit, so patience 1 stops after epoch 2
    stop = {"class_path": "pytorch_lightning.callbacks.EarlyStopping",
            "init_args": {"monitor": "val_acc", "mode": "max", "patience": 1, "min_delta": 1.0}}
    cli = run_cli(["fit", "--config", config_with(tmp_path, stop), "--trainer.max_epochs=10", *SMALL])
    assert cli.trainer.early_stopping_callback.stopped_epoch == 1
    results = json.loads(next(Path("runs/recipe").glob("version_*/results.json")).read_text())
    assert results["epochs"] == 2 and "test_acc" in results["test"]


class RecordLR(Callback):
    """The optimizer's learning rate at every training step."""

    def __init__(self) -> None:
        self.lrs: list[float] = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.lrs.append(trainer.optimizers[0].param_groups[0]["lr"])


def test_learning_rate_finder_sets_the_lr(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    finder = {"class_path": "pytorch_lightning.callbacks.LearningRateFinder",
              "init_args": {"min_lr": 1e-4, "max_lr": 0.1, "num_training_steps": 16}}
    record = RecordLR()
    monkeypatch.setattr(VecsetCLI, "_instantiate_trainer",
                        lambda self, config, callbacks: ORIGINAL(self, config, [*callbacks, record]))
    cli = run_cli(["fit", "--config", config_with(tmp_path, finder), "--trainer.max_epochs=1", *SMALL])
    found = next(c for c in cli.trainer.callbacks if type(c).__name__ == "LearningRateFinder").optimal_lr
    suggestion = found.suggestion()
    assert 1e-4 <= suggestion <= 0.1 and len(found.results["lr"]) == 16
    assert suggestion != pytest.approx(0.003)  # differs from the config's lr, or the test shows nothing
    assert cli.model.hparams.lr == pytest.approx(suggestion)  # what configure_optimizers used
    # every step runs at the found rate times the schedule (warmup, then cosine), not only the first
    steps = cli.trainer.estimated_stepping_batches
    assert len(record.lrs) == steps == 16
    warmup = max(1, int(0.05 * steps))
    assert record.lrs == pytest.approx([suggestion * warmup_cosine(s, steps, warmup) for s in range(steps)])
    # recorded as what ran: the saved config (a rerun trains at it) and results.json
    run = next(Path("runs/recipe").glob("version_*"))
    assert yaml.safe_load((run / "config.yaml").read_text())["model"]["init_args"]["lr"] == pytest.approx(suggestion)
    assert json.loads((run / "results.json").read_text())["lr_found"] == pytest.approx(suggestion)
    assert not list(Path(".").glob(".lr_find_*.ckpt"))  # its temporary checkpoint is removed


def test_a_finder_that_finds_no_rate_says_the_configured_lr_is_kept(tmp_path, monkeypatch, capsys):
    """Issue 57: a finder with too few points found no rate and said so only in Lightning's words
    ("Failed to compute suggestion"); one vecset line says the configured lr is kept."""
    monkeypatch.chdir(tmp_path)
    finder = {"class_path": "pytorch_lightning.callbacks.LearningRateFinder",
              "init_args": {"min_lr": 1e-4, "max_lr": 0.1, "num_training_steps": 5}}
    cli = run_cli(["fit", "--config", config_with(tmp_path, finder), "--trainer.max_epochs=1", *SMALL])
    out = capsys.readouterr().out
    line = ("vecset: the learning-rate finder found no rate (5 points measured, its suggestion needs at least 13: "
            "raise its num_training_steps); training keeps the configured lr 0.003")
    assert out.count(line) == 1, out[-2000:]
    assert cli.model.hparams.lr == pytest.approx(0.003)
    assert "lr_found" not in json.loads(next(Path("runs/recipe").glob("version_*/results.json")).read_text())
