"""The learning rate scaled with the batch size: the config's ``lr`` is the rate at a reference
batch size, the optimizer's is that rate times a rule of (actual batch / reference).

Goyal et al. 2017, "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour"
(https://arxiv.org/abs/1706.02677): for SGD, multiply the rate by k when the batch grows k
times ("linear"), with a warmup. Malladi et al. 2022, "On the SDEs and Scaling Rules for Adaptive
Gradient Algorithms" (https://arxiv.org/abs/2205.10287): for Adam-family optimizers (AdamW, the
default here), multiply it by sqrt(k) ("sqrt").

The actual batch is the one an optimizer step averages over: the data module's ``batch_size``
(per process) x ``accumulate_grad_batches`` x the processes (``world_size``), read once, when the
optimizer is built. Warmup given as a fraction (< 1) is a fraction of the run's optimizer steps,
which follow the batch size (half the steps at twice the batch, the same share of the epochs);
warmup given as a step count (>= 1) stays that many steps whatever the batch.
"""

from __future__ import annotations

import math
from typing import Literal

import pytorch_lightning as pl
from pytorch_lightning.callbacks import LearningRateFinder

from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.data.multitask import MultiTaskDataModule

LrScaling = Literal["linear", "sqrt"]
RULES = {"linear": lambda k: k, "sqrt": math.sqrt}


def check_lr_scaling_args(lr_reference_batch: int | None, lr_scaling: str) -> None:
    """At construction: a positive reference batch (or None: off) and a known rule."""
    if lr_reference_batch is not None and (isinstance(lr_reference_batch, bool) or lr_reference_batch < 1):
        raise ValueError(f"lr_reference_batch must be a positive batch size (the batch the configured lr is "
                         f"meant for) or null (no scaling), got {lr_reference_batch!r}")
    if lr_scaling not in RULES:
        raise ValueError(f"lr_scaling must be one of {sorted(RULES)} (Goyal et al. 2017 / Malladi et al. 2022), "
                         f"got {lr_scaling!r}")


def scaled_lr(lr: float, batch: int, reference: int, rule: LrScaling) -> float:
    """``lr`` (the rate at batch ``reference``) at batch ``batch`` under ``rule``."""
    return lr * RULES[rule](batch / reference)


def data_batch_size(dm: object) -> int:
    """The batch size (per process) the data module declares; a multi-task data module's tasks
    must agree on one (each task's loss is a mean over its own batch)."""
    if isinstance(dm, MultiTaskDataModule):
        sizes = {name: data_batch_size(task) for name, task in dm.tasks.items()}
        if len(set(sizes.values())) > 1:
            raise ValueError("lr_reference_batch: the tasks' batch sizes differ ("
                             + ", ".join(f"{t} {b}" for t, b in sizes.items())
                             + "); scaling the learning rate needs one: give every task the same batch_size")
        return next(iter(sizes.values()))
    if not isinstance(dm, VecsetDataModule) or not dm.batch_size:
        what = "no data module" if dm is None else f"the data module {type(dm).__name__}"
        raise ValueError(f"lr_reference_batch: the learning rate is scaled by the data's batch size, and {what} "
                         "declares none (a VecsetDataModule's batch_size); set lr_reference_batch to null")
    return int(dm.batch_size)


def optimizer_lr(trainer: pl.Trainer, lr: float, reference: int, rule: LrScaling) -> tuple[float, str]:
    """``lr`` (the rate at batch ``reference``) scaled to the batch an optimizer step of
    ``trainer`` averages over (see the module docstring), and why, for the log line."""
    if any(isinstance(c, LearningRateFinder) for c in trainer.callbacks):
        # the finder's rate is the one at the actual batch already: scaled again, it would be wrong
        raise ValueError("lr_reference_batch: a LearningRateFinder finds the learning rate at the actual batch "
                         "size, which the scaling would then scale again; use one of them")
    per_step, accumulate, processes = data_batch_size(trainer.datamodule), trainer.accumulate_grad_batches, trainer.world_size
    batch = per_step * accumulate * processes
    new = scaled_lr(lr, batch, reference, rule)
    why = (f"lr {lr:g} is for batch {reference} (lr_reference_batch), x {RULES[rule](batch / reference):.4g} "
           f"({rule} rule) for batch {batch} ({per_step} per step x {accumulate} accumulated x {processes} processes)")
    return new, why


def check_scaling_applied(lr_reference_batch: int | None, scaled: float | None) -> None:
    """At the start of fit: a config's ``optimizer:`` section replaces the module's optimizer
    (LightningCLI), which is what reads ``lr_reference_batch``: said, not ignored."""
    if lr_reference_batch is not None and scaled is None:
        raise ValueError("lr_reference_batch: the optimizer was not built by the module's configure_optimizers "
                         "(a config's optimizer: section replaces it), so nothing scaled the learning rate; "
                         "remove one of them")
