"""Callbacks the ``vecset`` CLI adds to every run.

- ``NonFiniteGuard``: stop on a NaN/inf in an input batch (checked on the host, before the
  optimizer steps on it) or in the loss (a device-side flag read at logging steps), naming
  the batch, its sample ids and their inputs (the data module's ``describe``: a file, a CSV
  line) (Lightning's own ``detect_anomaly`` names an autograd node, not the data).
- ``ResumeState``: what Lightning's checkpoint lacks for an exact mid-epoch resume: where in
  the epoch the data order was (``ResumableSampler``) and the random number generators
  (dropout). Lightning restores weights, optimizer, scheduler and loop counters itself.
"""

from __future__ import annotations

import logging
import random
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback
from torch import Tensor

from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.data.multitask import MultiTaskDataModule
from vecset.pipelines.data.samplers import ResumableSampler

log = logging.getLogger(__name__)


class NonFiniteError(ValueError):
    """A NaN or inf in a batch or in the loss."""


def _bad_rows(t: Tensor) -> Tensor:
    """(B,) True where a sample (row) has a non-finite value."""
    bad = ~torch.isfinite(t)
    return bad.reshape(bad.shape[0], -1).any(1) if bad.dim() > 0 else bad.reshape(1)


def _all_finite(tensors: Any) -> bool:
    """Every value of every tensor is finite, with one reduction per tensor and one read: a sum
    is NaN or inf wherever a value is (NaN and inf propagate), so a finite total proves them all
    finite. A total that overflows from finite values only sends the batch to the per-row
    search (``_bad_rows``), which then finds nothing. Per-field ``isfinite`` masks, their
    per-row reductions and a read per field cost about 1 ms a FreeSolv step on this CPU."""
    total = torch.stack([t.sum(dtype=torch.float64) for t in tensors]).sum()
    return bool(torch.isfinite(total))


def _is_multitask(batch: Any) -> bool:
    """A multi-task training batch: ``{task: batch}``."""
    return isinstance(batch, dict) and bool(batch) and all(isinstance(v, dict) for v in batch.values())


def describe_inputs(trainer: pl.Trainer, ids: list[int], task: str | None = None, limit: int = 10) -> str:
    """`` (input; input; ...)``: what the data module calls these samples (its ``describe(id)``:
    a file, a CSV line and SMILES, ...), at most ``limit`` of them; empty where it has no
    ``describe`` or only repeats the ids."""
    dm = getattr(trainer, "datamodule", None)
    if not isinstance(dm, VecsetDataModule) or not ids:
        return ""
    names = []
    for i in ids[:limit]:
        try:
            names.append(dm.describe(i, task=task) if isinstance(dm, MultiTaskDataModule) else dm.describe(i))
        except Exception as e:  # noqa: BLE001 - the non-finite value is the error to report, not this
            names.append(f"id {i}: describe failed ({type(e).__name__}: {e})")
    if names == [str(i) for i in ids[:limit]]:
        return ""
    more = f"; and {len(ids) - limit} more" if len(ids) > limit else ""
    return f" ({'; '.join(names)}{more})"


class NonFiniteGuard(Callback):
    """Raise ``NonFiniteError`` when a float tensor of a batch (train/val/test) or the training
    loss is NaN/inf, without making a training step wait on the device.

    Training inputs are checked on the host, before the batch moves to the device (the task
    modules' ``on_before_batch_transfer`` calls ``check_host_batch``; evaluation batches at
    their ``on_*_batch_start``): the message names the stage, the
    batch index, the key, the sample ids (``batch["ids"]``) and what the data module calls them
    (``describe(id)``); a bad training batch stops the run before any step is taken on it.

    The loss is checked on the device: each step folds "is it finite" into a device-side flag
    (and the first bad loss's value and step), read on the host only at Lightning's logging
    steps (``log_every_n_steps``), at the epoch's end, before validation and before a
    checkpoint is saved. The error then names the step, the batch and its sample ids (kept on
    the host since the last read): it comes at the next of those points, so the steps in
    between have been taken (the weights may be non-finite), but no checkpoint is written
    after a non-finite loss."""

    def __init__(self, check_inputs: bool = True, check_loss: bool = True) -> None:
        self.check_inputs, self.check_loss = check_inputs, check_loss
        self._first_bad: Tensor | None = None  # () long on the device: first bad global step, -1 none
        self._bad_value: Tensor | None = None  # () float: that step's loss
        self._recent: dict[int, tuple[int, int, Any]] = {}  # global step -> (epoch, batch index, host ids)
        self._ids_pending: Any = None  # the next training batch's ids: host ints, or a device tensor
        self._host_checked = False  # check_host_batch saw the coming batch (else it was drawn on the device)

    @staticmethod
    def _batch_problem(trainer: pl.Trainer, batch: Any, batch_idx: int, stage: str,
                       task: str | None = None) -> str | None:
        if not isinstance(batch, dict):
            return None
        if _is_multitask(batch):
            for name, sub in batch.items():
                if problem := NonFiniteGuard._batch_problem(trainer, sub, batch_idx, stage, name):
                    return problem
            return None
        floats = {key: value for key, value in batch.items()
                  if isinstance(value, Tensor) and value.is_floating_point() and value.numel()}
        if not floats or _all_finite(floats.values()):
            return None
        ids = batch.get("ids")
        where = f"{stage} ({task})" if task is not None else stage
        for key, value in floats.items():
            rows = _bad_rows(value)
            if rows.any():
                bad_ids = ids[rows.to(ids.device)].tolist() if isinstance(ids, Tensor) and len(ids) == len(rows) else "?"
                named = describe_inputs(trainer, bad_ids, task) if isinstance(bad_ids, list) else ""
                kinds = sorted({"nan" if torch.isnan(value).any() else "", "inf" if torch.isinf(value).any() else ""} - {""})
                return (f"{'/'.join(kinds)} in batch[{key!r}] of {where} batch {batch_idx} (epoch {trainer.current_epoch}, "
                        f"global step {trainer.global_step}); sample ids: {bad_ids}{named}. Fix or drop these samples.")
        return None

    @staticmethod
    def _task_of_loader(trainer: pl.Trainer, dataloader_idx: int) -> str | None:
        """Multi-task validation/test run the tasks' loaders one after another (``sequential``)."""
        dm = getattr(trainer, "datamodule", None)
        return dm.names[dataloader_idx] if isinstance(dm, MultiTaskDataModule) else None

    @staticmethod
    def _stop(trainer: pl.Trainer, problem: str | None, collective: bool) -> None:
        """Raise on every process if any found a problem (training steps are collective under
        DDP: one process stopping alone would leave the others waiting)."""
        if collective and trainer.world_size > 1:
            if trainer.strategy.reduce_boolean_decision(problem is not None, all=False) and problem is None:
                raise NonFiniteError("another process found a non-finite value; its error names the batch and samples")
        if problem is not None:
            raise NonFiniteError(problem)

    def _check_batch(self, trainer: pl.Trainer, batch: Any, batch_idx: int, stage: str,
                     task: str | None = None) -> None:
        # evaluation batches are checked locally: their number may differ between processes
        self._stop(trainer, self._batch_problem(trainer, batch, batch_idx, stage, task), collective=stage == "train")

    # -- inputs: on the host, before the transfer ------------------------------------------
    def check_host_batch(self, trainer: pl.Trainer, batch: Any, dataloader_idx: int = 0) -> None:
        """A training batch as the loader gave it (CPU tensors), before it moves to the device:
        its inputs checked, and its ids kept for the loss check's message."""
        if trainer.training:
            # the loop names this batch ``batch_idx + 1`` (training_epoch_loop.advance)
            batch_idx = trainer.fit_loop.epoch_loop.batch_idx + 1
            self._ids_pending, self._host_checked = _host_ids(batch), True
            if self.check_inputs:
                self._check_batch(trainer, batch, batch_idx, "train")

    # evaluation batches are checked on the device, with the loop's own batch index (not a
    # training step: nothing waits on them but the evaluation itself)
    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx: int, dataloader_idx: int = 0) -> None:
        if self.check_inputs:
            self._check_batch(trainer, batch, batch_idx, "validation", self._task_of_loader(trainer, dataloader_idx))

    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx: int, dataloader_idx: int = 0) -> None:
        if self.check_inputs:
            self._check_batch(trainer, batch, batch_idx, "test", self._task_of_loader(trainer, dataloader_idx))

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        # a batch drawn on the device (data kept there, device_loader.py) never passed
        # check_host_batch: keep a reference to its ids tensor, read only when the guard reports
        if not self._host_checked:
            self._ids_pending = _device_ids(batch)
        self._host_checked = False

    # -- the loss: a device-side flag, read at logging steps -------------------------------
    def on_before_backward(self, trainer, pl_module, loss: Tensor) -> None:
        if not self.check_loss:
            return
        step = trainer.global_step
        self._recent[step] = (trainer.current_epoch, trainer.fit_loop.epoch_loop.batch_idx, self._ids_pending)
        loss = loss.detach()
        if self._first_bad is None or self._first_bad.device != loss.device:
            self._first_bad = torch.full((), -1, dtype=torch.long, device=loss.device)
            self._bad_value = torch.zeros((), dtype=loss.dtype, device=loss.device)
        new = ~torch.isfinite(loss).all() & (self._first_bad < 0)  # () bool, on the device
        self._first_bad = torch.where(new, step, self._first_bad)
        self._bad_value = torch.where(new, loss.reshape(-1)[0].to(self._bad_value.dtype), self._bad_value)

    def _read_loss_flag(self, trainer: pl.Trainer) -> None:
        """The one host read of the loss check: raise if a step since the last read had a
        non-finite loss (collectively under DDP)."""
        if not self.check_loss:
            return
        problem = None
        bad = int(self._first_bad) if self._first_bad is not None else -1
        if bad >= 0:
            epoch, batch_idx, ids = self._recent.get(bad, (None, None, None))
            tasks = ids.items() if isinstance(ids, dict) else [(None, ids)]
            samples = []
            for task, t_ids in tasks:
                if isinstance(t_ids, Tensor):  # a device batch's ids, read now that there is an error
                    t_ids = t_ids.tolist()
                named = describe_inputs(trainer, t_ids, task) if isinstance(t_ids, list) else ""
                samples.append(f"{task + ' ' if task is not None else ''}{t_ids if t_ids is not None else '?'}{named}")
            problem = (f"training loss is {float(self._bad_value)} at train batch {batch_idx} (epoch {epoch}, "
                       f"global step {bad}); the inputs were finite, sample ids in this batch: "
                       f"{', '.join(samples)}. Likely causes: learning rate too high, targets out of range, an empty set. "
                       f"(Found at global step {trainer.global_step}: the loss is read every log_every_n_steps, at "
                       "epoch ends and before checkpoints, so the steps in between were taken.)")
        self._recent = {}
        self._stop(trainer, problem, collective=True)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        # Lightning's own test for "this step logs" (``log_every_n_steps``)
        if trainer._logger_connector.should_update_logs:
            self._read_loss_flag(trainer)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self._read_loss_flag(trainer)

    def on_validation_start(self, trainer, pl_module) -> None:
        if trainer.training:
            self._read_loss_flag(trainer)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        # raised before the file is written: no checkpoint holds the weights of a non-finite step
        if trainer.training:
            self._read_loss_flag(trainer)


def _host_ids(batch: Any) -> Any:
    """A training batch's sample ids as a list (or {task: list}), read while they are on the host."""
    if _is_multitask(batch):
        return {task: _host_ids(sub) for task, sub in batch.items()}
    ids = batch.get("ids") if isinstance(batch, dict) else None
    return ids.tolist() if isinstance(ids, Tensor) else None


def _device_ids(batch: Any) -> Any:
    """A training batch's sample ids as the tensor it holds (or {task: tensor}), not read."""
    if _is_multitask(batch):
        return {task: _device_ids(sub) for task, sub in batch.items()}
    ids = batch.get("ids") if isinstance(batch, dict) else None
    return ids if isinstance(ids, Tensor) else None


# -- exact resume -------------------------------------------------------------------------
def rng_state() -> dict:
    """Torch (CPU and CUDA), Python and NumPy generator states as plain data (tensors, ints,
    lists), so the checkpoint still loads with ``torch.load(weights_only=True)``."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state = {"torch": torch.get_rng_state(), "python": random.getstate(),
             "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(gauss)]}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    version, internal, gauss_next = state["python"]
    random.setstate((version, tuple(internal), gauss_next))
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    if "cuda" in state and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


def _train_loaders(trainer: pl.Trainer) -> list:
    loaders = trainer.train_dataloader
    if isinstance(loaders, dict):
        return list(loaders.values())
    return list(loaders) if isinstance(loaders, (list, tuple)) else [loaders]


class ResumeState(Callback):
    """Saves, with every checkpoint, the epoch, the number of training batches already done in
    it and the RNG states; on resume, tells each ``ResumableSampler`` to skip those batches and
    restores the RNGs just before the first resumed step. Without a ``ResumableSampler`` a
    mid-epoch resume starts that epoch's data over (logged)."""

    KEY = "vecset_resume"

    def __init__(self) -> None:
        self._pending: dict | None = None

    def on_save_checkpoint(self, trainer: pl.Trainer, pl_module, checkpoint: dict) -> None:
        progress = trainer.fit_loop.epoch_loop.batch_progress.current
        checkpoint[self.KEY] = {"epoch": trainer.current_epoch, "batches_done": int(progress.processed),
                                "rng": rng_state()}

    def on_load_checkpoint(self, trainer: pl.Trainer, pl_module, checkpoint: dict) -> None:
        self._pending = checkpoint.get(self.KEY)

    def on_train_start(self, trainer: pl.Trainer, pl_module) -> None:
        state, self._pending = self._pending, None
        if state is None:
            return
        done = state["batches_done"]
        if done and done < trainer.num_training_batches:
            samplers = 0
            for dl in _train_loaders(trainer):
                sampler = getattr(dl, "sampler", None)
                if isinstance(sampler, ResumableSampler) and dl.batch_size:
                    sampler.resume_at(state["epoch"], done * dl.batch_size)
                    samplers += 1
            if samplers:
                # the loader iterator was built before the checkpoint was restored; with worker
                # processes it has already drawn indices, so build it again
                fetcher = getattr(trainer.fit_loop, "_data_fetcher", None)
                if fetcher is not None:
                    iter(fetcher)
                log.info("resuming epoch %d after %d of %d batches", state["epoch"], done, trainer.num_training_batches)
            else:
                log.warning("resuming in the middle of epoch %d (after %d batches), but the train loader has no "
                            "ResumableSampler: this epoch's data starts over", state["epoch"], done)
        set_rng_state(state["rng"])
