"""One task's step, shared by TaskModule and MultiTaskModule: encoder -> backbone -> head,
the loss, the metric update and the names everything is logged under."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal, Protocol, runtime_checkable

import pytorch_lightning as pl
from torch import Tensor, nn
from torchmetrics import MeanMetric, MetricCollection

from vecset.contracts.abilities import Width
from vecset.encoders.contract import Encoder
from vecset.heads.contract import Head
from vecset.pipelines.training.forward import forward_task

Stage = Literal["train", "val", "test"]
STAGES: tuple[Stage, ...] = ("train", "val", "test")


def check_parts(encoder: nn.Module, head: nn.Module, task: str | None = None) -> None:
    """Encoders and heads follow their contracts (the step and the hand-over rely on them)."""
    where = f"task {task!r}: " if task else ""
    if not isinstance(encoder, Encoder):
        raise TypeError(f"{where}the encoder {type(encoder).__name__} is not a vecset.encoders.Encoder: "
                        "subclass it (forward(batch) -> VectorSet; receive(spec) to take data at setup)")
    if not isinstance(head, Head):
        raise TypeError(f"{where}the head {type(head).__name__} is not a vecset.heads.Head: subclass it "
                        "(forward, loss, metrics, metric_inputs, predict, monitor)")


def check_widths(encoder: Encoder, backbone: nn.Module, head: Head, task: str | None = None) -> None:
    """The widths the encoder returns, the backbone takes and returns, and the head reads agree,
    checked when the model is built (else a task stops at its first step, naming no task). The
    encoder's ``out_width`` and the head's ``in_width`` are those they declare; the backbone's
    is its ``d_model`` (``Width``: Backbone and the baselines); ``nn.Identity`` passes widths through."""
    where = f"task {task!r}: " if task else ""
    enc, head_in = encoder.out_width, head.in_width
    bb = type(backbone).__name__
    if isinstance(backbone, nn.Identity):
        if enc is not None and head_in is not None and enc != head_in:
            raise ValueError(f"{where}the encoder {type(encoder).__name__} returns vectors of width {enc}, but the "
                             f"head {type(head).__name__} reads width {head_in} (the backbone {bb} passes them "
                             "through): give both the same d_model")
        return
    if not isinstance(backbone, Width):
        return
    width = backbone.d_model
    if enc is not None and enc != width:
        raise ValueError(f"{where}the encoder {type(encoder).__name__} returns vectors of width {enc}, but the "
                         f"backbone {bb} expects d_model={width}: every task's encoder projects to the shared "
                         f"backbone's width (set the encoder's d_model to {width}, or give this task a model of "
                         "its own)")
    if head_in is not None and head_in != width:
        raise ValueError(f"{where}the head {type(head).__name__} reads vectors of width {head_in}, but the backbone "
                         f"{bb} returns width {width}: set the head's d_model to {width}")


def metric_prefix(stage: Stage, task: str | None = None) -> str:
    """``val_`` alone (``val_acc``, ``val_loss``); ``speech/val_`` in a multi-task run."""
    return f"{task}/{stage}_" if task else f"{stage}_"


def stage_metrics(head: Head, stage: Stage, task: str | None = None) -> MetricCollection:
    """The head's metrics for one stage, named as they are logged."""
    return head.metrics().clone(prefix=metric_prefix(stage, task))


def detached(out: Any) -> Any:
    """``out`` (a tensor or a dict of them) cut from the graph, for the metrics."""
    if isinstance(out, Tensor):
        return out.detach()
    if isinstance(out, dict):
        return {k: v.detach() if isinstance(v, Tensor) else v for k, v in out.items()}
    return out


@runtime_checkable
class HostBatchCheck(Protocol):
    """A callback that checks each batch on the host, before it moves to the device
    (NonFiniteGuard): declared by the method, called by ``check_on_host``."""

    def check_host_batch(self, trainer: pl.Trainer, batch: Any, dataloader_idx: int = 0) -> None: ...


@cache
def declares_host_check(cls: type) -> bool:
    """``cls`` declares ``HostBatchCheck``, answered once per class: ``isinstance`` against a
    runtime-checkable Protocol walks the protocol's attributes at every call (about 0.1 ms a
    callback on this CPU, paid at every training step)."""
    return issubclass(cls, HostBatchCheck)


class LossMean(MeanMetric):
    """A MeanMetric of a scalar loss per batch, weighted by batch size, that never reads the
    loss on the host: torchmetrics' NaN check (``nans.any()``) is a host-device sync at every
    step on a GPU. A NaN loss makes the mean NaN, as ``nan_strategy=nan`` did (NonFiniteGuard
    reports it). Same arithmetic as MeanMetric: sum += value x weight, weight += weight."""

    def update(self, value: Tensor, weight: float = 1.0) -> None:
        """``value``: a scalar loss (a tensor, on the module's device); ``weight``: a number."""
        value = value.to(self.dtype)
        self.mean_value += value.sum() * float(weight)
        self.weight += float(weight) * value.numel()


def train_loss_mean() -> MeanMetric:
    """The epoch mean of a training loss, as ``task_step`` logs it: a ``LossMean`` (weighted by
    batch size, read on the host only where Lightning logs it), which syncs across DDP processes
    once, at the epoch's end. Pass a copy of the loss, not a view that backward needs."""
    return LossMean()


def on_host(batch: Any) -> bool:
    """Every tensor in ``batch`` (nested dicts, lists) is on the CPU."""
    if isinstance(batch, Tensor):
        return batch.device.type == "cpu"
    if isinstance(batch, dict):
        return all(on_host(v) for v in batch.values())
    if isinstance(batch, (list, tuple)):
        return all(on_host(v) for v in batch)
    return True


def check_on_host(module: pl.LightningModule, batch: Any, heads: dict[str | None, Head],
                  dataloader_idx: int = 0) -> Any:
    """What reads a batch's values, run on the host before the batch moves to the device (the
    modules' ``on_before_batch_transfer``), where a read costs no device sync: each head's
    ``check_batch`` (label ranges) and the trainer's callbacks that declare ``HostBatchCheck``
    (NonFiniteGuard). ``heads``: {None: head} alone; {task: head} in a multi-task run, whose
    training batches are {task: batch} and whose evaluation batches are loader
    ``dataloader_idx``'s task's. Returns the batch.

    A batch already on another device (data kept there: pipelines/data/device_loader.py, checked
    once when it was put there) is not read: a read would be a sync.

    Shapes: batch {"x": (B, N, F), "y": ..., "ids": (B,)} (or {task: that}), CPU tensors."""
    if not on_host(batch):
        return batch
    if isinstance(batch, dict):
        if None in heads:
            parts = [(None, batch)]
        elif batch and all(isinstance(v, dict) or v is None for v in batch.values()):
            parts = [(t, b) for t, b in batch.items() if b is not None]
        else:
            parts = [(list(heads)[dataloader_idx], batch)]
        for task, b in parts:
            heads[task].check_batch(b)
    trainer = module._trainer
    if trainer is not None:
        for cb in trainer.callbacks:
            if declares_host_check(type(cb)):
                cb.check_host_batch(trainer, batch, dataloader_idx)
    return batch


def task_step(module: pl.LightningModule, encoder: nn.Module, backbone: nn.Module, head: Head,
              metrics: MetricCollection, batch: dict, stage: Stage, task: str | None = None,
              train_loss: MeanMetric | None = None, test_time_flip: bool = False) -> Tensor:
    """Forward one task's batch, update and log its metrics (epoch means), return its loss.

    Alone (``task`` None) the task's loss is the run's: it is logged here as ``train_loss``
    (per step and epoch) / ``val_loss`` / ``test_loss``. In a multi-task run the task's losses
    are logged as ``task/train_loss`` / ``task/val_loss`` / ``task/test_loss``, here, in the
    task's own steps: Lightning puts what is logged at epoch end under every dataloader's
    column. The run's ``val_loss`` / ``test_loss`` are the caller's (MultiTaskModule weights
    the tasks' epoch means into them). ``test_time_flip`` (``forward_task``) applies to
    validation and test, never to training.
    """
    out = forward_task(encoder, backbone, head, batch, test_time_flip and stage != "train")
    loss = head.loss(out, batch)
    bs = len(batch["ids"])
    if stage == "train":
        # through ``train_loss`` (the module's train_loss_mean()): a step's value is this
        # process's batch loss, the epoch's the mean over every process (sync_dist would
        # all-reduce at every step; with neither, Lightning warns under DDP that the epoch
        # value is one process's)
        if train_loss is None:
            raise ValueError("task_step needs train_loss (a train_loss_mean() of the module) in training")
        train_loss(loss.detach().clone(), bs)  # a copy: see train_loss_mean
        # not prog_bar: Lightning turns progress-bar values into numbers after every batch (a
        # host-device sync); vecset's ProgressBar shows train_loss read at logging steps only
        module.log(f"{task}/train_loss" if task else "train_loss", train_loss, on_step=True, on_epoch=True)
    elif task is None:
        module.log(f"{stage}_loss", loss, on_step=False, on_epoch=True, prog_bar=stage != "test", batch_size=bs,
                   sync_dist=True)
    else:  # the epoch mean, weighted by batch size, under this task's dataloader only
        module.log(f"{task}/{stage}_loss", loss, on_step=False, on_epoch=True, batch_size=bs,
                   add_dataloader_idx=False, sync_dist=True)
    metrics.update(*head.metric_inputs(detached(out), batch))
    # one task's metrics in the progress bar; a multi-task run's would crowd it
    module.log_dict(metrics, on_step=False, on_epoch=True, prog_bar=task is None and stage == "val",
                    batch_size=bs, add_dataloader_idx=False)
    return loss
