"""Checkpoints that survive a crash: atomic writes, ``last.ckpt`` after every epoch, a
per-step checkpoint, resuming the run directory, and a clear message when a file is not a
checkpoint or a checkpoint does not fit the config.

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

import importlib
import io
import logging
import os
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from fsspec.core import url_to_fs
from lightning_fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning_fabric.utilities.cloud_io import _is_local_file_protocol, get_filesystem
from pytorch_lightning.callbacks import Callback, ModelCheckpoint

log = logging.getLogger(__name__)


class AtomicCheckpointIO(TorchCheckpointIO):
    """``TorchCheckpointIO`` whose local writes are atomic: temp file in the same directory,
    fsync, ``os.replace``, fsync of the directory. Remote paths (s3://, ...) keep Lightning's
    own writer (object stores publish an object only once it is complete)."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options: Any | None = None) -> None:
        if storage_options is not None or not _is_local_file_protocol(path):
            return super().save_checkpoint(checkpoint, path, storage_options)
        atomic_torch_save(checkpoint, Path(path))


def atomic_torch_save(obj: Any, path: Path) -> None:
    """``torch.save`` to ``path`` so that a crash at any moment leaves either the previous
    file or the complete new one. The temp name is fixed per target (``.<name>.tmp``), so an
    interrupted write leaves at most one stale temp file, replaced by the next save."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
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

        - class_path: pipelines.StepCheckpoint
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


# -- resuming the run directory ---------------------------------------------------------
def wants_last_checkpoint(argv: list[str]) -> bool:
    """True when the command line asks to resume from ``--ckpt_path last``."""
    for i, a in enumerate(argv):
        if a == "--ckpt_path" and i + 1 < len(argv) and argv[i + 1] == "last":
            return True
        if a == "--ckpt_path=last":
            return True
    return False


def run_version(argv: list[str], root: Path) -> int:
    """The ``version_<n>`` directory a run writes into: a new one, except that
    ``--ckpt_path last`` continues the newest existing one (its checkpoints are there)."""
    taken = [int(m.group(1)) for p in Path(root).glob("version_*") if (m := re.fullmatch(r"version_(\d+)", p.name))]
    if wants_last_checkpoint(argv) and taken:
        log.info("--ckpt_path last: continuing %s/version_%d", root, max(taken))
        return max(taken)
    return max(taken, default=-1) + 1


# -- reading a checkpoint ---------------------------------------------------------------
class NotACheckpointError(ValueError):
    """A file given as a checkpoint that is not one."""


def _not_a_torch_file(f: str | io.BytesIO, size: int) -> str | None:
    """Why ``f`` (a path or the bytes) cannot be a ``torch.save`` file, or None."""
    if size == 0:
        return "the file is empty (0 bytes)"
    if not zipfile.is_zipfile(f):
        if isinstance(f, io.BytesIO):
            f.seek(0)
            head = f.read(16)
        else:
            with open(f, "rb") as fh:
                head = fh.read(16)
        return (f"not a zip archive, which torch.save writes (a truncated copy, another format, or PyTorch "
                f"< 1.6's legacy format?); {size} bytes beginning {head!r}")
    with zipfile.ZipFile(f) as z:
        if not any(n == "data.pkl" or n.endswith("/data.pkl") for n in z.namelist()):
            return f"a zip archive without torch.save's data.pkl (it holds {sorted(z.namelist())[:3]})"
    return None


def read_checkpoint(path: str | os.PathLike) -> dict:
    """A Lightning checkpoint's contents, loaded with ``torch.load(weights_only=True)`` (no
    code from the file runs). A local path or ``file://`` URL is memory-mapped (tensors are
    mapped, not read); another fsspec URL (``s3://``...) is read through fsspec, as Lightning
    reads it. Raises ``NotACheckpointError`` naming the file and what it is instead."""
    url = str(path)
    if _is_local_file_protocol(url):
        local = url_to_fs(url)[1]  # file:///x -> /x
        problem = _not_a_torch_file(local, os.path.getsize(local))
        source: str | io.BytesIO = local
    else:
        with get_filesystem(url).open(url, "rb") as f:
            source = io.BytesIO(f.read())
        problem = _not_a_torch_file(source, len(source.getvalue()))
        source.seek(0)
    if problem:
        raise NotACheckpointError(f"{url} is not a PyTorch checkpoint: {problem}")
    ckpt = torch.load(source, map_location="cpu", weights_only=True, mmap=isinstance(source, str))
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt:
        what = f"a dict with keys {sorted(ckpt)[:6]}" if isinstance(ckpt, dict) else f"a {type(ckpt).__name__}"
        raise NotACheckpointError(f"{url} is a PyTorch file but not a Lightning checkpoint: it holds {what}, "
                                  "no 'state_dict'")
    return ckpt


def is_checkpoint_file(path: str) -> bool:
    """``path`` (a local path or an fsspec URL) names an existing file."""
    fs, local = url_to_fs(path)
    return bool(fs.isfile(local))


# -- does a checkpoint fit the config? ----------------------------------------------------
def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict):
        out: dict[str, Any] = {}
        for k, v in d.items():
            if not str(k).startswith("_"):  # _instantiator, _class_path: bookkeeping
                out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: d}


# may differ on purpose (another learning rate to fine-tune); taken from the checkpoint
TRAINING_ONLY = {"lr", "weight_decay", "warmup"}


def decode_settings(class_path: str) -> tuple[str, ...]:
    """The constructor arguments that class declares as decode-only (its ``decode_settings``,
    e.g. ``Seq2SeqHead``'s beam size): they change how a trained model's outputs are decoded,
    not its weights, so a checkpoint may be used with other values."""
    module, _, name = class_path.rpartition(".")
    return tuple(getattr(getattr(importlib.import_module(module), name), "decode_settings", ()))


def hparams_mismatch(saved: dict, current: dict) -> list[str]:
    """Differences between the model config stored in a checkpoint and the current one: a
    component whose class differs is reported once (its arguments are not compared), then
    arguments present in both with different values. Arguments present on one side only
    (an argument added to a class later, with a default), ``TRAINING_ONLY`` and a class's
    ``decode_settings`` are not differences."""
    a, b = _flatten(saved), _flatten(current)
    diffs, other_class, decode_only = [], [], set()
    # a decode setting may be a component itself (LabelingHead's decoder): everything under it
    under_decode = lambda k: any(k.startswith(f"{d}.") for d in decode_only)  # noqa: E731
    for key in sorted(k for k in set(a) & set(b) if k.endswith("class_path")):
        prefix = key[: -len("class_path")]
        if under_decode(key):
            continue
        if a[key] != b[key]:
            diffs.append(f"model.{key}: checkpoint has {a[key]!r}, the config has {b[key]!r}")
            other_class.append(prefix)
        else:
            decode_only |= {f"{prefix}init_args.{n}" for n in decode_settings(a[key])}
    for key in sorted(set(a) & set(b)):
        if (key in TRAINING_ONLY or key in decode_only or under_decode(key) or key.endswith("class_path")
                or any(key.startswith(p) for p in other_class)):
            continue
        if a[key] != b[key]:
            diffs.append(f"model.{key}: checkpoint has {a[key]!r}, the config has {b[key]!r}")
    return diffs


def state_mismatch(state_dict: dict, model: torch.nn.Module) -> list[str]:
    """Parameter names and shapes that differ between a checkpoint's state_dict and ``model``."""
    have = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    want = {k: tuple(v.shape) for k, v in state_dict.items()}
    missing, unexpected = sorted(set(have) - set(want)), sorted(set(want) - set(have))
    shape = [f"{k} {want[k]} in the checkpoint, {have[k]} in the model" for k in sorted(set(have) & set(want))
             if have[k] != want[k]]
    diffs = []
    if shape:
        diffs.append("parameter shapes differ: " + "; ".join(shape[:6]) + (" ..." if len(shape) > 6 else ""))
    for what, keys in (("model parameters are not in the checkpoint", missing),
                       ("checkpoint parameters are not in the model", unexpected)):
        if keys:
            diffs.append(f"{len(keys)} {what}: " + ", ".join(keys[:6]) + (" ..." if len(keys) > 6 else ""))
    return diffs


class CheckpointMismatchError(ValueError):
    """A checkpoint that does not fit the configured model."""


def mismatch_error(path, diffs: list[str]) -> CheckpointMismatchError:
    return CheckpointMismatchError(
        f"checkpoint {path} does not match this config:\n  - " + "\n  - ".join(diffs)
        + "\nUse the config the checkpoint was trained with (config.yaml in its run directory).")


def check_checkpoint(path: str | os.PathLike, model: torch.nn.Module) -> None:
    """Raise ``CheckpointMismatchError`` naming every difference between the checkpoint at
    ``path`` and ``model`` (config, then parameters). Loads with ``weights_only=True`` (no
    code from the file runs) and ``mmap=True`` (tensors are mapped, not read)."""
    ckpt = read_checkpoint(path)
    diffs = hparams_mismatch(ckpt.get("hyper_parameters") or {}, dict(getattr(model, "hparams", {}) or {}))
    diffs += state_mismatch(ckpt.get("state_dict") or {}, model)
    if diffs:
        raise mismatch_error(path, diffs)


def with_decode_settings(saved: Any, current: Any) -> Any:
    """``saved`` (a checkpoint's model config) with ``current``'s values of the
    ``decode_settings`` of every component that names the same class in both."""
    if not (isinstance(saved, dict) and isinstance(current, dict)):
        return saved
    out = {k: with_decode_settings(v, current.get(k)) for k, v in saved.items()}
    if "class_path" in saved and saved["class_path"] == current.get("class_path"):
        have = current.get("init_args") or {}
        out["init_args"] = dict(out.get("init_args") or {}) | {
            n: have[n] for n in decode_settings(saved["class_path"]) if n in have}
    return out


class CheckpointConfigCheck:
    """LightningCLI mixin. With ``--ckpt_path FILE`` LightningCLI (2.6, ``_parse_ckpt_path``)
    replaces the model section of the user's config with the hyperparameters stored in the
    checkpoint, so an edited encoder or head would be silently ignored; with ``--ckpt_path
    last`` it builds the config's model and fails inside ``load_state_dict``. Both now fail
    first, listing what differs between the checkpoint and the config.

    This replaces LightningCLI's step (same replacement) where it fell short: it tested the
    path with ``Path.is_file``, so a ``file://`` or ``s3://`` checkpoint was neither checked nor
    used for the config (the config's model got the weights, whatever it was); and the
    replacement also overwrote decode settings given for this run (``beam_size`` at predict
    time), which are now kept from the config."""

    def _parse_ckpt_path(self) -> None:
        sub = self.config.get("subcommand")
        if not sub:
            return
        path = self.config[sub].get("ckpt_path")
        # "last" is resolved by the trainer, which builds the config's model (as LightningCLI)
        from_config = path == "last"
        if from_config:
            path = self._newest_last_checkpoint(self.config[sub])
        if not path or not is_checkpoint_file(path):
            return  # Lightning's other names (best, hpc) and missing files: Lightning says
        saved = dict(read_checkpoint(path).get("hyper_parameters") or {})
        model = self.config[sub].get("model")
        current = model.as_dict() if hasattr(model, "as_dict") else dict(model or {})
        current = current.get("init_args", current)
        diffs = hparams_mismatch(saved, current)
        if diffs:
            raise mismatch_error(path, diffs)
        saved.pop("_instantiator", None)
        if from_config or not saved:
            return
        # as LightningCLI: the model is built from the checkpoint's hyperparameters
        hparams = with_decode_settings(saved, current)
        if "_class_path" in hparams:
            hparams = {"class_path": hparams.pop("_class_path"), "dict_kwargs": hparams}
        try:
            self.config = self.parser.parse_object({sub: {"model": hparams}}, self.config)
        except SystemExit:
            sys.stderr.write("Parsing of ckpt_path hyperparameters failed!\n")
            raise

    @staticmethod
    def _newest_last_checkpoint(cfg) -> str | None:
        """Where ``--ckpt_path last`` will look: the run directory's ``checkpoints/`` (the
        CLI's VECSET_RUN_NAME/VECSET_RUN_VERSION under runs/); Lightning takes the newest
        ``last*.ckpt`` there."""
        name, version = os.environ.get("VECSET_RUN_NAME"), os.environ.get("VECSET_RUN_VERSION")
        if name is None or version is None:
            return None
        found = list((Path("runs") / name / f"version_{version}" / "checkpoints").glob("last*.ckpt"))
        return str(max(found, key=lambda p: p.stat().st_mtime)) if found else None


def with_atomic_checkpoint_io(plugins) -> list:
    """The trainer's plugins plus ``AtomicCheckpointIO``, unless one is a CheckpointIO already."""
    from lightning_fabric.plugins.io.checkpoint_io import CheckpointIO

    plugins = [] if plugins is None else list(plugins) if isinstance(plugins, (list, tuple)) else [plugins]
    if not any(isinstance(p, CheckpointIO) for p in plugins):
        plugins.append(AtomicCheckpointIO())
    return plugins
