"""MultiTaskModule: one shared Backbone, an encoder and a head per task.

Caruana 1997, "Multitask Learning": hard parameter sharing. Every task's encoder projects
its modality to the shared d_model; every task's loss moves the same backbone weights.
"""

from __future__ import annotations

import logging
from typing import Any

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.core.mixins.hparams_mixin import _given_hyperparameters
from torch import Tensor, nn
from torchmetrics import MeanMetric

from vecset.encoders.contract import Encoder
from vecset.heads.contract import Head
from vecset.pipelines.data.multitask import MultiTaskDataModule
from vecset.pipelines.training.hand_over import hand_over
from vecset.pipelines.training.lr_scaling import (
    LrScaling,
    check_lr_scaling_args,
    check_scaling_applied,
)
from vecset.pipelines.training.set_size import check_set_size
from vecset.pipelines.training.step import (
    STAGES,
    check_on_host,
    check_parts,
    check_widths,
    forward_task,
    stage_metrics,
    task_step,
    train_loss_mean,
)
from vecset.pipelines.training.task import Schedule, adamw_warmup_cosine, best_and_last_checkpoint
from vecset.pipelines.training.task_view import TaskView
from vecset.pipelines.training.warm_start import (
    check_something_trains,
    check_warm_start_args,
    expand_part_names,
    freeze_parts,
    multi_task_parts,
    start_fit,
    warm_start,
)

log = logging.getLogger(__name__)


class MultiTaskModule(pl.LightningModule):
    """Tasks named by the keys of ``encoders`` and ``heads`` (the same keys as the data's).

    Args:
        backbone: the one shared trunk.
        encoders: task name -> encoder (raw batch -> VectorSet of width d_model).
        heads: task name -> head.
        loss_weights: task name -> weight of its loss in the sum (default 1 each).
        lr, weight_decay, warmup, lr_reference_batch, lr_scaling, schedule: as in TaskModule (the tasks'
            batch sizes must then agree: that batch is the one scaled from).
        task_checkpoints: besides the best checkpoint by ``val_loss`` (the one ``vecset fit``
            tests), keep each task's best by its own validation metric (``best-<task>-epoch<e>.ckpt``,
            monitoring ``<task>/val_rmse`` or ``<task>/val_acc``): each task's epoch chosen on its
            own validation split (bench/molecule_multitask.py tests them).
        init_from, init_parts, freeze: a warm start, as in TaskModule; the parts are ``backbone``,
            ``encoders.<task>`` and ``heads.<task>`` (``encoder`` / ``head``: every task's). A task's
            encoder and head load the checkpoint's of the same task, else a single-task
            checkpoint's ``encoder`` / ``head`` (a pretraining run's).

    Metrics are logged with the task's name as prefix: ``speech/val_acc``,
    ``digits/val_acc``, ``freesolv/val_rmse``; ``val_loss`` is the weighted sum of the
    tasks' mean validation losses (the checkpoint monitor).
    """

    def __init__(self, backbone: nn.Module, encoders: dict[str, Encoder], heads: dict[str, Head],
                 loss_weights: dict[str, float] | None = None, lr: float = 1e-3, weight_decay: float = 0.01,
                 warmup: float = 0.05, task_checkpoints: bool = False, init_from: str | None = None,
                 init_parts: list[str] | None = None, freeze: list[str] | None = None,
                 lr_reference_batch: int | None = None, lr_scaling: LrScaling = "sqrt",
                 schedule: Schedule = "steps") -> None:
        super().__init__()
        check_lr_scaling_args(lr_reference_batch, lr_scaling)
        if set(encoders) != set(heads):
            raise ValueError(f"encoders {sorted(encoders)} and heads {sorted(heads)} must name the same tasks")
        weights = {t: 1.0 for t in encoders} | dict(loss_weights or {})
        if set(weights) != set(encoders):
            raise ValueError(f"loss_weights names unknown tasks: {sorted(set(weights) - set(encoders))}")
        for t in encoders:
            check_parts(encoders[t], heads[t], task=t)
            check_widths(encoders[t], backbone, heads[t], task=t)
        if _given_hyperparameters.get() is not None:
            self.save_hyperparameters()
        else:
            self.save_hyperparameters(ignore=["backbone", "encoders", "heads"])
        self.backbone = backbone
        self.encoders = nn.ModuleDict(encoders)
        self.heads = nn.ModuleDict(heads)
        self.tasks = list(encoders)
        self.loss_weights = weights
        self.metrics = nn.ModuleDict({
            f"{stage}__{t}": stage_metrics(heads[t], stage, task=t) for stage in STAGES for t in self.tasks
        })
        self.mean_losses = nn.ModuleDict({f"{stage}__{t}": MeanMetric() for stage in ("val", "test") for t in self.tasks}
                                         | {f"train__{t}": train_loss_mean() for t in self.tasks})
        self.train_loss_mean = train_loss_mean()  # of the weighted sum, one value per step
        # as TaskModule: names checked now, init_from read when a fit starts from scratch
        parts, self._sources = self.parts()
        init_parts = expand_part_names(parts, init_parts, "init_parts")
        freeze = expand_part_names(parts, freeze, "freeze")
        check_warm_start_args(parts, init_from, init_parts, freeze)
        self._init_from, self._init_parts, self._freeze = init_from, init_parts, freeze
        self.warm_start_report = None
        freeze_parts(parts, list(freeze or []))
        self._lr_reference_batch, self._lr_scaling = lr_reference_batch, lr_scaling
        self.scaled_lr: float | None = None  # as TaskModule's

    def parts(self) -> tuple[dict[str, nn.Module], dict[str, tuple[str, ...]]]:
        """The parts ``init_parts`` and ``freeze`` name, and their checkpoint prefixes."""
        return multi_task_parts(self.backbone, dict(self.encoders), dict(self.heads))

    def apply_warm_start(self) -> dict | None:
        """Load ``init_from`` now (what a fit from scratch does at its start); the report."""
        if self._init_from:
            self.warm_start_report = warm_start(self.parts()[0], self._init_from, self._init_parts, self._freeze,
                                                self._sources)
        return self.warm_start_report

    def on_fit_start(self) -> None:
        # after the checkpoint of a resumed fit was restored, before the first step
        check_scaling_applied(self._lr_reference_batch, self.scaled_lr)
        self.warm_start_report = start_fit(self.trainer, self.parts()[0], self._init_from, self._init_parts,
                                           self._freeze, self._sources)

    def forward(self, task: str, batch: dict) -> Tensor:
        return forward_task(self.encoders[task], self.backbone, self.heads[task], batch)

    def task_view(self, task: str) -> TaskView:
        """Task ``task`` as a single-task model (the shared backbone, its encoder and head)."""
        return TaskView(self, task)

    def _task_names(self) -> list[str]:
        dm = self.trainer.datamodule
        names = list(dm.tasks) if isinstance(dm, MultiTaskDataModule) else self.tasks
        if set(names) != set(self.tasks):
            raise ValueError(f"the data's tasks {sorted(names)} differ from the model's {sorted(self.tasks)}")
        return names

    def setup(self, stage: str) -> None:
        """The hand-over, per task: each task's data module's DataSpec goes to that task's
        encoder and head (as in TaskModule.setup; messages name the task). At predict only
        the task being predicted (the data's ``predict_task``) is set up."""
        if stage == "fit":
            check_something_trains(self, self._freeze)
        dm = self.trainer.datamodule if self._trainer is not None else None
        if not isinstance(dm, MultiTaskDataModule):
            if stage in ("fit", "predict") and dm is not None:
                raise ValueError(f"MultiTaskModule {'trains' if stage == 'fit' else 'predicts'} on a "
                                 f"MultiTaskDataModule (one data module per task of {self.tasks}), "
                                 f"got {type(dm).__name__}")
            return
        names = self._task_names()
        for t in [dm.predict_task_name()] if stage == "predict" else names:
            hand_over(dm.tasks[t], stage, self.encoders[t], self.heads[t], task=t)
            check_set_size(self.encoders[t], self.backbone, dm.tasks[t], self.trainer.strategy.root_device, task=t)

    def _task_step(self, task: str, batch: dict, stage: str) -> Tensor:
        loss = task_step(self, self.encoders[task], self.backbone, self.heads[task],
                         self.metrics[f"{stage}__{task}"], batch, stage, task=task,
                         train_loss=self.mean_losses[f"train__{task}"] if stage == "train" else None)
        if stage != "train":  # val_loss / test_loss: the tasks' epoch means, weighted
            self.mean_losses[f"{stage}__{task}"].update(loss.detach(), weight=len(batch["ids"]))
        return loss

    def training_step(self, batch: dict, batch_idx: int) -> Tensor:
        total = 0.0
        for task, b in batch.items():
            if b is None:
                continue
            total = total + self.loss_weights[task] * self._task_step(task, b, "train")
        self.train_loss_mean(total.detach().clone())  # synced across DDP processes at the epoch's end (task_step)
        # not prog_bar (a host read after every batch): ProgressBar shows it at logging steps
        self.log("train_loss", self.train_loss_mean, on_step=True, on_epoch=True)
        return total

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        """Label ranges and non-finite inputs are checked here, on the host (``check_on_host``)."""
        if self._trainer is not None and self.trainer.predicting:  # the predicted task's batches
            names = [self.trainer.datamodule.predict_task_name()]
        else:
            names = self._task_names() if self._trainer is not None else self.tasks
        return check_on_host(self, batch, {t: self.heads[t] for t in names}, dataloader_idx)

    def validation_step(self, batch: dict, batch_idx: int, dataloader_idx: int = 0) -> None:
        self._task_step(self._task_names()[dataloader_idx], batch, "val")

    def test_step(self, batch: dict, batch_idx: int, dataloader_idx: int = 0) -> None:
        self._task_step(self._task_names()[dataloader_idx], batch, "test")

    def predict_step(self, batch: dict, batch_idx: int) -> dict:
        """The predicted task's (the data's ``predict_task``) predictions, as TaskModule's."""
        task = self.trainer.datamodule.predict_task_name()
        return {"ids": batch["ids"].tolist(), **self.heads[task].predict(self(task, batch), batch)}

    def _log_losses(self, stage: str) -> None:
        # each task's own loss is logged in its steps (task_step): logged here, Lightning would
        # show it under every task's dataloader
        total = 0.0
        for t in self.tasks:
            m = self.mean_losses[f"{stage}__{t}"]
            value = m.compute()
            m.reset()
            total = total + self.loss_weights[t] * value
        # the tasks' means are synced (torchmetrics), so the sum is the same on every process:
        # "max" over them is the value itself, and tells Lightning that it is synced (else it warns under DDP)
        self.log(f"{stage}_loss", total, prog_bar=stage == "val", sync_dist=True, reduce_fx="max")

    def on_validation_epoch_end(self) -> None:
        self._log_losses("val")

    def on_test_epoch_end(self) -> None:
        self._log_losses("test")

    def configure_optimizers(self):
        h = self.hparams
        return adamw_warmup_cosine(self, h.lr, h.weight_decay, h.warmup, self._lr_reference_batch, self._lr_scaling,
                                   h.schedule)

    def configure_callbacks(self):
        callbacks = best_and_last_checkpoint(self, "val_loss", "min")  # the first: trainer.checkpoint_callback
        if callbacks and self.hparams.get("task_checkpoints"):
            for t in self.tasks:
                metric, mode = self.heads[t].monitor
                callbacks.append(ModelCheckpoint(monitor=f"{t}/{metric}", mode=mode, auto_insert_metric_name=False,
                                                 filename=f"best-{t}-epoch{{epoch:03d}}"))
        return callbacks


def shared_backbone_grads(model: MultiTaskModule, batches: dict[str, dict]) -> dict[str, float]:
    """Gradient norm each task's loss puts on the shared backbone (diagnostics and tests)."""
    norms = {}
    for task, batch in batches.items():
        model.zero_grad(set_to_none=True)
        model.heads[task].loss(model(task, batch), batch).backward()
        grads = [p.grad.norm() for p in model.backbone.parameters() if p.grad is not None]
        norms[task] = float(torch.stack(grads).norm()) if grads else 0.0
    model.zero_grad(set_to_none=True)
    return norms


def task_table(test: dict[str, float], tasks: list[str]) -> tuple[list[dict], str]:
    """Per task, its test metrics from this run (losses left out), as rows and as a table.
    Nothing from other runs: a single-task baseline is only comparable at the same number of
    optimizer steps, which ``python bench/multitask.py`` runs and reports itself."""
    rows = []
    for t in tasks:
        for key, value in sorted(test.items()):
            if key.startswith(f"{t}/test_") and not key.endswith("_loss"):
                rows.append({"task": t, "metric": key.split("/", 1)[1], "value": value})
    lines = [f"{'task':10s} {'metric':10s} {'this run':>10s}"]
    lines += [f"{r['task']:10s} {r['metric']:10s} {r['value']:10.4f}" for r in rows]
    return rows, "\n".join(lines)
