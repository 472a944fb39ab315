"""The learning rate scaled with the batch size (``lr_reference_batch``, ``lr_scaling``): the
optimizer's rate for batch 256 at reference 128, off by default, the errors' first lines."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import pytorch_lightning as pl
import yaml
from pytorch_lightning.callbacks import LearningRateFinder

from vecset.backbone import Backbone
from vecset.encoders import VectorEncoder
from vecset.heads import LabelingHead, SequenceHead
from vecset.pipelines import TaskModule
from vecset.pipelines.cli import run_cli
from vecset.pipelines.data.multitask import MultiTaskDataModule
from vecset.pipelines.data.synthetic import SyntheticSetDataModule
from vecset.pipelines.training.multitask import MultiTaskModule

ROOT = Path(__file__).resolve().parents[3]


def task_module(**kw) -> TaskModule:
    return TaskModule(VectorEncoder(2, 8), Backbone(8, depth=1, heads=2), LabelingHead(8, 2), lr=1e-3, **kw)


def attach(module: pl.LightningModule, datamodule, accumulate: int = 1, world_size: int = 1, callbacks=()) -> None:
    # what configure_optimizers reads from the trainer
    module._trainer = SimpleNamespace(estimated_stepping_batches=100, datamodule=datamodule, callbacks=list(callbacks),
                                      accumulate_grad_batches=accumulate, world_size=world_size)


def base_lrs(module: pl.LightningModule) -> list[float]:
    """The rates the schedule multiplies (LambdaLR's), one per parameter group."""
    return module.configure_optimizers()["lr_scheduler"]["scheduler"].base_lrs


@pytest.mark.parametrize(("rule", "factor"), [("linear", 2.0), ("sqrt", math.sqrt(2.0))])
def test_batch_256_at_reference_128(rule, factor, caplog):
    m = task_module(lr_reference_batch=128, lr_scaling=rule)
    attach(m, SyntheticSetDataModule(batch_size=256))
    with caplog.at_level(logging.INFO):
        assert base_lrs(m) == pytest.approx([1e-3 * factor] * 2)
    assert m.scaled_lr == pytest.approx(1e-3 * factor)
    line = next(r.getMessage() for r in caplog.records if "lr_reference_batch" in r.getMessage())
    assert line.startswith(f"learning rate {1e-3 * factor:.4g}: lr 0.001 is for batch 128 (lr_reference_batch)")
    assert f"({rule} rule) for batch 256 (256 per step x 1 accumulated x 1 processes); warmup 5 of 100 steps" in line


def test_the_batch_counts_accumulation_and_processes():
    m = task_module(lr_reference_batch=128, lr_scaling="linear")
    attach(m, SyntheticSetDataModule(batch_size=32), accumulate=2, world_size=2)  # 32 x 2 x 2 = 128
    assert base_lrs(m) == pytest.approx([1e-3] * 2)


def test_off_by_default_the_rate_is_the_configured_one():
    m = task_module()
    attach(m, None)  # nothing about the data is read when off
    assert base_lrs(m) == pytest.approx([1e-3] * 2) and m.scaled_lr is None


def test_a_data_module_without_a_batch_size_is_an_error():
    m = task_module(lr_reference_batch=128)
    attach(m, pl.LightningDataModule())
    with pytest.raises(ValueError, match=r"^lr_reference_batch: the learning rate is scaled by the data's batch size, "
                                         r"and the data module LightningDataModule declares none"):
        m.configure_optimizers()
    attach(m, None)
    with pytest.raises(ValueError, match=r"^lr_reference_batch: .* and no data module declares none"):
        m.configure_optimizers()


def test_a_learning_rate_finder_and_scaling_are_not_both_taken():
    m = task_module(lr_reference_batch=128)
    attach(m, SyntheticSetDataModule(batch_size=256), callbacks=[LearningRateFinder()])
    with pytest.raises(ValueError, match=r"^lr_reference_batch: a LearningRateFinder finds"):
        m.configure_optimizers()


def test_bad_arguments_name_the_option():
    with pytest.raises(ValueError, match=r"^lr_reference_batch must be a positive batch size"):
        task_module(lr_reference_batch=0)
    with pytest.raises(ValueError, match=r"^lr_scaling must be one of \['linear', 'sqrt'\]"):
        task_module(lr_reference_batch=128, lr_scaling="cube")


def multi_task_module(**kw) -> MultiTaskModule:
    return MultiTaskModule(Backbone(8, depth=1, heads=2), {"a": VectorEncoder(2, 8), "b": VectorEncoder(2, 8)},
                           {"a": LabelingHead(8, 2), "b": SequenceHead(8, 1, task="regression")}, lr=1e-3, **kw)


def test_multi_task_scales_by_the_tasks_common_batch_and_names_differing_ones():
    m = multi_task_module(lr_reference_batch=128, lr_scaling="linear")
    attach(m, MultiTaskDataModule({"a": SyntheticSetDataModule(batch_size=512),
                                   "b": SyntheticSetDataModule(batch_size=512, target="mean")}))
    assert base_lrs(m) == pytest.approx([4e-3] * 2)
    attach(m, MultiTaskDataModule({"a": SyntheticSetDataModule(batch_size=64),
                                   "b": SyntheticSetDataModule(batch_size=32, target="mean")}))
    with pytest.raises(ValueError, match=r"^lr_reference_batch: the tasks' batch sizes differ \(a 64, b 32\)"):
        m.configure_optimizers()


def test_a_fit_trains_at_the_scaled_rate_and_a_replaced_optimizer_is_an_error(tmp_path, monkeypatch, caplog):
    """Through the command: the config's keys reach the module, the optimizer runs at the scaled
    rate, the warmup fraction counts this batch size's steps (64 sets in batches of 16: 4 steps,
    half of them warmup); an optimizer: section (which would not read lr_reference_batch) stops the fit."""
    monkeypatch.chdir(tmp_path)
    args = ["fit", "--config", str(ROOT / "configs/debug.yaml"), "--plots=false", "--trainer.max_epochs=1",  # lr 0.003
            "--trainer.enable_progress_bar=false", "--trainer.limit_val_batches=0", "--trainer.limit_test_batches=0",
            "--data.init_args.n_train=64", "--data.init_args.n_val=8", "--data.init_args.n_test=8",
            "--data.init_args.batch_size=16", "--model.init_args.warmup=0.5", "--model.init_args.lr_reference_batch=4",
            "--model.init_args.lr_scaling=linear"]
    with caplog.at_level(logging.INFO, logger="vecset"):
        cli = run_cli(args)
    assert cli.model.scaled_lr == pytest.approx(0.012)
    assert cli.trainer.lr_scheduler_configs[0].scheduler.base_lrs == pytest.approx([0.012] * 2)
    assert "learning rate 0.012: lr 0.003 is for batch 4 (lr_reference_batch), x 4 (linear rule) for batch 16 " \
           "(16 per step x 1 accumulated x 1 processes); warmup 2 of 4 steps" in caplog.text
    saved = yaml.safe_load((tmp_path / "runs/debug/version_0/config.yaml").read_text())["model"]["init_args"]
    assert (saved["lr"], saved["lr_reference_batch"], saved["lr_scaling"]) == (0.003, 4, "linear")
    with pytest.raises(ValueError, match=r"^lr_reference_batch: the optimizer was not built by the module's"):
        run_cli([*args, "--optimizer=torch.optim.SGD", "--optimizer.lr=0.1"])


def test_a_checkpoint_trained_at_another_reference_batch_fits_the_config():
    """Like lr, the scaling is training-only: testing or fine-tuning a run's checkpoint under a
    config with another (or no) reference batch is not a mismatch."""
    from vecset.pipelines.training.checkpoint_fit import hparams_mismatch

    saved = {"lr": 1e-3, "lr_reference_batch": 128, "lr_scaling": "linear", "weight_decay": 0.01}
    assert hparams_mismatch(saved, {"lr": 2e-3, "lr_reference_batch": None, "lr_scaling": "sqrt", "weight_decay": 0.01}) == []
