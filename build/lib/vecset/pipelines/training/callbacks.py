"""Callbacks the ``vecset`` CLI adds to every run.

- ``NonFiniteGuard``: stop on a NaN/inf in an input batch or in the loss, naming the batch,
  its sample ids and their inputs (the data module's ``describe``: a file, a CSV line),
  before the optimizer steps on it (Lightning's own ``detect_anomaly`` names an autograd
  node, not the data).
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

from vecset.pipelines.data.samplers import ResumableSampler
from vecset.pipelines.training.multitask import MultiTaskDataModule

log = logging.getLogger(__name__)


class NonFiniteError(ValueError):
    """A NaN or inf in a batch or in the loss."""


def _bad_rows(t: Tensor) -> Tensor:
    """(B,) True where a sample (row) has a non-finite value."""
    bad = ~torch.isfinite(t)
    return bad.reshape(bad.shape[0], -1).any(1) if bad.dim() > 0 else bad.reshape(1)


def _is_multitask(batch: Any) -> bool:
    """A multi-task training batch: ``{task: batch}``."""
    return isinstance(batch, dict) and bool(batch) and all(isinstance(v, dict) for v in batch.values())


def describe_inputs(trainer: pl.Trainer, ids: list[int], task: str | None = None, limit: int = 10) -> str:
    """`` (input; input; ...)``: what the data module calls these samples (its ``describe(id)``:
    a file, a CSV line and SMILES, ...), at most ``limit`` of them; empty where it has no
    ``describe`` or only repeats the ids."""
    dm = getattr(trainer, "datamodule", None)
    if not hasattr(dm, "describe") or not ids:
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
    loss is NaN/inf. The message names the stage, the batch index, the key, the sample ids
    (``batch["ids"]``) and what the data module calls them (``describe(id)``); the loss is
    checked before ``backward``, so no step is taken on it and the last checkpoint holds
    finite weights."""

    def __init__(self, check_inputs: bool = True, check_loss: bool = True) -> None:
        self.check_inputs, self.check_loss = check_inputs, check_loss
        self._batch: dict | None = None
        self._batch_idx = -1

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
        ids = batch.get("ids")
        where = f"{stage} ({task})" if task is not None else stage
        for key, value in batch.items():
            if not (isinstance(value, Tensor) and value.is_floating_point()) or value.numel() == 0:
                continue
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

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        self._batch, self._batch_idx = batch, batch_idx
        if self.check_inputs:
            self._check_batch(trainer, batch, batch_idx, "train")

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx: int, dataloader_idx: int = 0) -> None:
        if self.check_inputs:
            self._check_batch(trainer, batch, batch_idx, "validation", self._task_of_loader(trainer, dataloader_idx))

    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx: int, dataloader_idx: int = 0) -> None:
        if self.check_inputs:
            self._check_batch(trainer, batch, batch_idx, "test", self._task_of_loader(trainer, dataloader_idx))

    def on_before_backward(self, trainer, pl_module, loss: Tensor) -> None:
        if not self.check_loss:
            return
        problem = None
        if not torch.isfinite(loss).all():
            batch = self._batch if isinstance(self._batch, dict) else {}
            tasks = batch.items() if _is_multitask(batch) else [(None, batch)]
            samples = []
            for task, sub in tasks:
                ids = sub.get("ids")
                ids = ids.tolist() if isinstance(ids, Tensor) else "?"
                named = describe_inputs(trainer, ids, task) if isinstance(ids, list) else ""
                samples.append(f"{task + ' ' if task is not None else ''}{ids}{named}")
            problem = (f"training loss is {loss.item()} at train batch {self._batch_idx} (epoch {trainer.current_epoch}, "
                       f"global step {trainer.global_step}); the inputs were finite, sample ids in this batch: "
                       f"{', '.join(samples)}. Likely causes: learning rate too high, targets out of range, an empty set.")
        self._stop(trainer, problem, collective=True)


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
