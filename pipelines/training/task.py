"""TaskModule: encoder + backbone + head, injected, trained with Lightning."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.core.mixins.hparams_mixin import _given_hyperparameters
from torch import Tensor, nn

from vecset.encoders.contract import Encoder
from vecset.heads.contract import Head
from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.data.overlap import note_pretraining_overlap
from vecset.pipelines.training.checkpoint import last_checkpoint
from vecset.pipelines.training.checkpoint_files import (
    NotACheckpointError,
    UnsafeCheckpointError,
    read_checkpoint,
)
from vecset.pipelines.training.checkpoint_fit import state_mismatch
from vecset.pipelines.training.elapsed import TrainingClock
from vecset.pipelines.training.hand_over import hand_over
from vecset.pipelines.training.lr_scaling import (
    LrScaling,
    check_lr_scaling_args,
    check_scaling_applied,
    optimizer_lr,
)
from vecset.pipelines.training.param_groups import weight_decay_groups
from vecset.pipelines.training.set_size import check_set_size
from vecset.pipelines.training.step import (
    check_on_host,
    check_parts,
    check_widths,
    forward_task,
    stage_metrics,
    task_step,
    train_loss_mean,
)
from vecset.pipelines.training.warm_start import (
    PARTS,
    check_something_trains,
    check_warm_start_args,
    freeze_parts,
    pretrained_on,
    start_fit,
    warm_start,
)

log = logging.getLogger(__name__)


def warmup_cosine(step: float, total: int, warmup: int) -> float:
    """LR multiplier: linear warmup to 1, then cosine decay to 0 at ``total``. ``step`` may be
    fractional (``budget_step``)."""
    if step < warmup:
        return min(1.0, (step + 1) / warmup)
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def budget_step(step: int, total: int, used: float) -> float:
    """Where the schedule stands after ``step`` of ``total`` optimizer steps with the fraction
    ``used`` of the time budget spent: the later of the two, in steps (progress = max(steps done /
    total, time used / budget), Li, Yumer and Ramanan 2020). A run that time never limits
    follows its steps exactly; a slower one completes its warmup and decay in fewer steps."""
    return max(float(step), used * total)


# what the warmup and decay run over: "steps", the optimizer steps (a run that max_time stops ends
# mid-schedule; the default: it scored higher on validation than "budget" on a busy machine,
# bench/logs/2026-12-06-budgeted-schedule.md); "budget", the steps or trainer.max_time, whichever
# ends first (budget_step)
Schedule = Literal["budget", "steps"]


def adamw_warmup_cosine(module: pl.LightningModule, lr: float, weight_decay: float, warmup: float,
                        lr_reference_batch: int | None = None, lr_scaling: LrScaling = "sqrt",
                        schedule: Schedule = "steps") -> dict:
    """AdamW over the trainable parameters (decay on weight matrices only: ``weight_decay_groups``),
    linear warmup then cosine decay to zero, over the optimizer steps or, with ``schedule``
    "budget" where the trainer has a ``max_time`` and a ``TrainingClock`` (every ``vecset`` run),
    over whichever runs out first (``budget_step``): the schedule ends within the budget. Where every parameter is on a CUDA
    device, the fused AdamW (one kernel launch for the whole update; torch's own advice for CUDA),
    else torch's default. With ``lr_reference_batch``, ``lr`` is the rate at that batch size, scaled
    to the actual one (``lr_scaling.py``); the rate used is kept in ``module.scaled_lr``."""
    groups = weight_decay_groups(module, weight_decay)
    cuda = all(p.is_cuda for g in groups for p in g["params"])
    total = max(1, int(module.trainer.estimated_stepping_batches))
    # a fraction: of the optimizer steps, which follow the batch size (lr_scaling.py)
    steps = max(1, int(warmup * total) if warmup < 1 else int(warmup))
    if lr_reference_batch is not None:
        lr, why = optimizer_lr(module.trainer, lr, lr_reference_batch, lr_scaling)
        log.info("learning rate %.4g: %s; warmup %d of %d steps", lr, why, steps, total)
        module.scaled_lr = lr
    opt = torch.optim.AdamW(groups, lr=lr, weight_decay=weight_decay, fused=True if cuda and groups else None)
    clock = next((c for c in module.trainer.callbacks if isinstance(c, TrainingClock)), None)
    if schedule == "budget" and clock is not None and clock.budget_seconds:
        # the clock's last reading (once per step, after it): the schedule itself reads no time
        def multiplier(s: int) -> float:
            return warmup_cosine(budget_step(s, total, clock.used), total, steps)
    else:
        def multiplier(s: int) -> float:
            return warmup_cosine(s, total, steps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, multiplier)
    return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def load_backbone(backbone: nn.Module, ckpt_path: str, freeze: bool) -> None:
    """Start from the backbone of another run's checkpoint (single- or multi-task)."""
    state = read_checkpoint(ckpt_path)["state_dict"]
    sub = {k[len("backbone."):]: v for k, v in state.items() if k.startswith("backbone.")}
    if not sub:
        raise ValueError(f"{ckpt_path} holds no 'backbone.*' weights")
    # compared first: load_state_dict's own error lists every parameter on a line of its own
    diffs = state_mismatch(sub, backbone)
    if diffs:
        raise ValueError(f"the backbone in {ckpt_path} does not match the configured one (compare depth, d_model, "
                         "heads): " + "; ".join(diffs))
    backbone.load_state_dict(sub)
    if freeze:
        for p in backbone.parameters():
            p.requires_grad_(False)


@contextmanager
def checkpoint_argument(name: str) -> Iterator[None]:
    """The file errors of a checkpoint given as argument ``name`` (missing, not a checkpoint,
    refused) name the argument first: a config error is found by its setting."""
    try:
        yield
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{name}: no such file: {e.filename} (expected a checkpoint a vecset run wrote, "
                                "e.g. runs/<job>/version_<n>/checkpoints/last.ckpt)") from None
    except (NotACheckpointError, UnsafeCheckpointError) as e:
        raise type(e)(f"{name}: {e}") from None


def best_and_last_checkpoint(module: pl.LightningModule, monitor: str, mode: str) -> list:
    """Keep the best checkpoint by the task's validation metric (first: it is
    ``trainer.checkpoint_callback``), and ``last.ckpt`` after every epoch (``last_checkpoint``);
    nothing when the trainer was built with ``enable_checkpointing=False``."""
    trainer = getattr(module, "_trainer", None)
    if trainer is not None and not trainer.checkpoint_callbacks:
        return []
    return [ModelCheckpoint(monitor=monitor, mode=mode, auto_insert_metric_name=False,
                            filename="best-epoch{epoch:03d}-" + monitor + "{" + monitor + ":.4f}"),
            last_checkpoint()]


class TaskModule(pl.LightningModule):
    """One task: ``encoder`` (raw batch -> VectorSet), ``backbone`` (VectorSet -> VectorSet),
    ``head`` (VectorSet -> outputs, loss, metrics).

    Args:
        encoder, backbone, head: modules built from the config (``class_path``/``init_args``).
        lr: peak AdamW learning rate.
        weight_decay: AdamW weight decay, on the weight matrices of linear, conv and recurrent
            layers only (not norms, biases, the CLS token, positional or embedding tables).
        warmup: warmup length, as a fraction of all optimizer steps (< 1; the steps follow the
            batch size) or a step count. Warmup and decay run over the steps (``schedule``).
        schedule: ``steps`` (the default: over the steps; ``max_time`` stops the run wherever
            the schedule is) or ``budget`` (over the steps or ``trainer.max_time``, whichever
            ends first: the decay completes within the time budget).
        lr_reference_batch: the batch size ``lr`` is meant for; the optimizer then uses ``lr``
            scaled to the actual batch (per step x accumulated x processes) by ``lr_scaling``:
            ``linear`` (x k for k times the batch; Goyal et al. 2017, for SGD) or ``sqrt``
            (x sqrt(k); Malladi et al. 2022, for Adam-family optimizers such as this AdamW).
            None (the default): ``lr`` as given (``lr_scaling.py``).
        backbone_ckpt: start the backbone from this checkpoint's ``backbone.*`` weights (for
            example a multi-task run's), then train as configured.
        freeze_backbone: keep those backbone weights fixed (train encoder and head only).
        init_from: warm start: a whole checkpoint (this or another job's, e.g. a pretraining
            run's) whose tensors of the same name and shape start ``init_parts`` when a fit starts
            from scratch; one table says what was loaded, new and skipped (``warm_start.py``).
            Weights only: unlike ``--ckpt_path`` (resume), the optimizer, schedule and epoch start
            afresh. Not read otherwise: a fit given ``--ckpt_path`` resumes and ignores it.
        init_parts: the parts ``init_from`` loads (``encoder``, ``backbone``, ``head``; None: all).
        freeze: parts kept fixed (no gradient), e.g. ``[encoder, backbone]`` to train a head only.
        test_time_flip: validation, test and predict use the mean of the outputs for each image
            and its mirror image (``forward_task``); for classes that look alike mirrored
            (clothing, natural images), not for digits or text. Training is unchanged.

    A config's ``optimizer:``/``lr_scheduler:`` sections replace this default AdamW +
    warmup + cosine schedule (LightningCLI's mechanism).
    """

    def __init__(self, encoder: Encoder, backbone: nn.Module, head: Head, lr: float = 1e-3,
                 weight_decay: float = 0.01, warmup: float = 0.05, backbone_ckpt: str | None = None,
                 freeze_backbone: bool = False, init_from: str | None = None,
                 init_parts: list[str] | None = None, freeze: list[str] | None = None,
                 lr_reference_batch: int | None = None, lr_scaling: LrScaling = "sqrt",
                 schedule: Schedule = "steps", test_time_flip: bool = False) -> None:
        super().__init__()
        check_lr_scaling_args(lr_reference_batch, lr_scaling)
        check_parts(encoder, head)
        check_widths(encoder, backbone, head)
        if _given_hyperparameters.get() is not None:
            # built by LightningCLI: it hands over the parsed config, so the checkpoint can
            # rebuild every injected module with load_from_checkpoint
            self.save_hyperparameters()
        else:
            self.save_hyperparameters(ignore=["encoder", "backbone", "head"])
        self.encoder, self.backbone, self.head = encoder, backbone, head
        if backbone_ckpt:
            with checkpoint_argument("backbone_ckpt"):
                load_backbone(backbone, backbone_ckpt, freeze_backbone)
        elif freeze_backbone:
            raise ValueError("freeze_backbone=True needs backbone_ckpt (a frozen random backbone learns nothing)")
        # the names are checked now, the checkpoint is read when a fit starts from scratch
        # (on_fit_start): a run's own checkpoint is all that testing or resuming it needs
        check_warm_start_args(self.parts(), init_from, init_parts, freeze)
        self._init_from, self._init_parts, self._freeze = init_from, init_parts, freeze
        self.warm_start_report = None  # part -> PartLoad, once init_from was loaded
        freeze_parts(self.parts(), list(freeze or []))  # e.g. a fixed random encoder, on purpose
        self.train_metrics = stage_metrics(head, "train")
        self.val_metrics = stage_metrics(head, "val")
        self.test_metrics = stage_metrics(head, "test")
        self.train_loss_mean = train_loss_mean()
        self._lr_reference_batch, self._lr_scaling = lr_reference_batch, lr_scaling
        self.scaled_lr: float | None = None  # the rate lr_reference_batch scaled lr to (configure_optimizers)

    def parts(self) -> dict[str, nn.Module]:
        """The parts ``init_parts`` and ``freeze`` name."""
        return dict(zip(PARTS, (self.encoder, self.backbone, self.head), strict=True))

    def apply_warm_start(self) -> dict | None:
        """Load ``init_from`` into ``init_parts`` now (``warm_start``); what a fit from scratch does
        at its start. The per-part report (None without init_from)."""
        if self._init_from:
            self.warm_start_report = warm_start(self.parts(), self._init_from, self._init_parts, self._freeze)
        return self.warm_start_report

    def on_fit_start(self) -> None:
        # after the checkpoint of a resumed fit was restored, before the first step
        check_scaling_applied(self._lr_reference_batch, self.scaled_lr)
        self.warm_start_report = start_fit(self.trainer, self.parts(), self._init_from, self._init_parts, self._freeze)
        dm = self.trainer.datamodule
        if self.warm_start_report is not None and isinstance(dm, VecsetDataModule):
            # the data init_from's checkpoint names: its overlap with the test split is noted
            if (data := pretrained_on(self._init_from)) is not None:
                note_pretraining_overlap(dm, data)

    def forward(self, batch: dict) -> Tensor:
        return forward_task(self.encoder, self.backbone, self.head, batch,
                            self.hparams.get("test_time_flip", False) and not self.training)

    def setup(self, stage: str) -> None:
        """The hand-over: the data module's DataSpec goes to the encoder and the head, which
        check it (class count, feature width) and, at fit, take what they learn from the
        training data (vocabulary, scaler, statistics). On resume the checkpoint, restored
        after this, brings its own. (What predict needs from the model, the predict side asks
        for itself: ``pipelines/predict/writer.py``.)"""
        if stage == "fit":
            check_something_trains(self, self._freeze)
        dm = self.trainer.datamodule if self._trainer is not None else None
        if dm is not None:
            hand_over(dm, stage, self.encoder, self.head)
            check_set_size(self.encoder, self.backbone, dm, self.trainer.strategy.root_device)

    # -- steps --------------------------------------------------------------------------
    def _step(self, batch: dict, stage: str) -> Tensor:
        return task_step(self, self.encoder, self.backbone, self.head, getattr(self, f"{stage}_metrics"),
                         batch, stage, train_loss=self.train_loss_mean if stage == "train" else None,
                         test_time_flip=self.hparams.get("test_time_flip", False))

    def training_step(self, batch: dict, batch_idx: int) -> Tensor:
        return self._step(batch, "train")

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        """Label ranges and non-finite inputs are checked here, on the host (``check_on_host``)."""
        return check_on_host(self, batch, {None: self.head}, dataloader_idx)

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        self._step(batch, "val")

    def test_step(self, batch: dict, batch_idx: int) -> None:
        self._step(batch, "test")

    def predict_step(self, batch: dict, batch_idx: int) -> dict:
        out = self(batch)
        return {"ids": batch["ids"].tolist(), **self.head.predict(out, batch)}

    # -- optimisation and checkpoints -------------------------------------------------
    def configure_optimizers(self):
        h = self.hparams
        return adamw_warmup_cosine(self, h.lr, h.weight_decay, h.warmup, self._lr_reference_batch, self._lr_scaling,
                                   h.schedule)

    def configure_callbacks(self):
        return best_and_last_checkpoint(self, *self.head.monitor)
