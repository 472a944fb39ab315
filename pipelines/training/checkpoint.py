"""Checkpoints that survive a crash: atomic writes, ``last.ckpt`` after every epoch, a
per-step checkpoint. Beside it: reading one (``checkpoint_files.py``), whether it fits the config
(``checkpoint_fit.py``, ``checkpoint_config_check.py``), the run folder (``run_folders.py``,
``resume_check.py``).

Why a CheckpointIO of our own: Lightning 2.6 (``lightning_fabric.utilities.cloud_io._atomic_save``)
writes through an fsspec transaction, i.e. to ``tempfile.mkstemp()`` in the *system* temp
directory, then ``shutil.move`` to the target. That is an atomic rename only when the temp
directory and the run directory are on the same filesystem; when they are not (``/tmp`` on
tmpfs, runs on NFS/Lustre: the usual cluster layout) ``shutil.move`` copies, and a kill during
the copy leaves a truncated ``last.ckpt``. It also never fsyncs. ``AtomicCheckpointIO`` writes
the temp file next to the target, fsyncs it, ``os.replace``-s it (atomic on POSIX) and fsyncs
the directory, so ``last.ckpt`` is always either the old or the new complete file.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from lightning_fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning_fabric.utilities.cloud_io import _is_local_file_protocol
from pytorch_lightning.callbacks import Callback, ModelCheckpoint

from vecset.pipelines.training.checkpoint_files import unsafe_checkpoint_error


class AtomicCheckpointIO(TorchCheckpointIO):
    """``TorchCheckpointIO`` whose local writes are atomic: temp file in the same directory,
    fsync, ``os.replace``, fsync of the directory. Remote paths (s3://, ...) keep Lightning's
    own writer (object stores publish an object only once it is complete)."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options: Any | None = None) -> None:
        if storage_options is not None or not _is_local_file_protocol(path):
            return super().save_checkpoint(checkpoint, path, storage_options)
        atomic_torch_save(checkpoint, Path(path))

    def load_checkpoint(self, path, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return super().load_checkpoint(path, *args, **kwargs)
        except pickle.UnpicklingError as e:
            raise unsafe_checkpoint_error(path, e) from None  # torch's text advises running the code


def atomic_torch_save(obj: Any, path: Path) -> None:
    """``torch.save`` to ``path`` so that a crash at any moment leaves either the previous
    file or the complete new one. The temp name is fixed per target (``.<name>.tmp``), so an
    interrupted write leaves at most one stale temp file, replaced by the next save. A write
    that fails (a full disk: ``OSError`` errno 28) removes its temp file and raises an
    ``OSError`` of the same errno naming the checkpoint."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
    except BaseException as e:
        tmp.unlink(missing_ok=True)  # a partial file, of no use (KeyboardInterrupt too)
        if isinstance(e, OSError):
            raise OSError(e.errno, f"{e.strerror or e} while writing the checkpoint (the previous {path.name}, "
                          "if any, is unchanged)", str(path)) from e
        raise
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)


def last_checkpoint() -> ModelCheckpoint:
    """``last.ckpt``: the complete training state at the end of every training epoch (after
    that epoch's validation, if any) and so at the end of fit, also when fit stops mid-epoch
    (``max_steps``).

    Why not ``ModelCheckpoint(monitor=..., save_last=True)``: in Lightning 2.6 that callback
    rewrites ``last.ckpt`` only in a step where it has just saved a top-k checkpoint
    (``_last_global_step_saved == global_step`` in ``on_validation_end``/``on_train_epoch_end``),
    i.e. only when the monitored metric improved, so ``last.ckpt`` stayed at the last
    improving epoch (epoch 9 of 12 in a debug run); ``save_last="link"`` links it to that same
    best file. This is Lightning's ordinary unmonitored checkpoint (``monitor=None``: every
    epoch, keep one) under the fixed name ``last``, written at the train epoch end so that it
    does not depend on when validation runs (``check_val_every_n_epoch``).

    A plain ModelCheckpoint, not a subclass: Lightning replaces the trainer's callbacks with a
    module's ``configure_callbacks`` by type (at fit, then again at test), walking a set of
    types, and kept a subclass beside ModelCheckpoint once or twice depending on that set's
    order, which differs between DDP processes (one rank ran one more collective: a hang).
    """
    return ModelCheckpoint(filename=ModelCheckpoint.CHECKPOINT_NAME_LAST, monitor=None, save_top_k=1,
                           every_n_epochs=1, save_on_train_epoch_end=True, enable_version_counter=False)


def last_checkpoint_path(trainer: pl.Trainer) -> str | None:
    """Where ``last_checkpoint()`` wrote last.ckpt in this run (None if nowhere)."""
    for cb in trainer.checkpoint_callbacks:
        if isinstance(cb, ModelCheckpoint) and cb.monitor is None and cb.filename == cb.CHECKPOINT_NAME_LAST:
            return cb.best_model_path or None  # an unmonitored ModelCheckpoint's newest file
    return None


class StepCheckpoint(Callback):
    """Saves ``last-step.ckpt`` every ``every_n_train_steps`` optimizer steps, so a crash
    mid-epoch costs at most that many steps. It goes into the ModelCheckpoint's directory;
    ``--ckpt_path last`` picks the newest of ``last.ckpt`` (end of epoch) and
    ``last-step.ckpt`` (Lightning matches ``last*`` names there and takes the newest).

    Add it in a config under ``trainer.callbacks`` (see configs/debug.yaml)::

        - class_path: vecset.pipelines.StepCheckpoint
          init_args: {every_n_train_steps: 100}
    """

    def __init__(self, every_n_train_steps: int = 100, filename: str = "last-step") -> None:
        if every_n_train_steps < 1:
            raise ValueError(f"StepCheckpoint.every_n_train_steps must be >= 1, got {every_n_train_steps}")
        if not filename.startswith("last"):
            raise ValueError(f"StepCheckpoint.filename must start with 'last' so that --ckpt_path last finds it, got {filename!r}")
        self.every_n_train_steps, self.filename = every_n_train_steps, filename
        self._last_saved_step = -1

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        step = trainer.global_step
        if step == 0 or step % self.every_n_train_steps or step == self._last_saved_step:
            return  # (several batches share a step under gradient accumulation)
        ckpt_cb = trainer.checkpoint_callback
        if ckpt_cb is None or ckpt_cb.dirpath is None:
            raise RuntimeError("StepCheckpoint needs a ModelCheckpoint callback to know the checkpoint directory")
        self._last_saved_step = step
        # the full training state (weights, optimizer, loops, callbacks) to resume from; said
        # explicitly: left to its default, Lightning 2.6 logs that it chose that at every save
        trainer.save_checkpoint(os.path.join(ckpt_cb.dirpath, self.filename + ".ckpt"), weights_only=False)



def with_atomic_checkpoint_io(plugins) -> list:
    """The trainer's plugins plus ``AtomicCheckpointIO``, unless one is a CheckpointIO already."""
    from lightning_fabric.plugins.io.checkpoint_io import CheckpointIO

    plugins = [] if plugins is None else list(plugins) if isinstance(plugins, (list, tuple)) else [plugins]
    if not any(isinstance(p, CheckpointIO) for p in plugins):
        plugins.append(AtomicCheckpointIO())
    return plugins
