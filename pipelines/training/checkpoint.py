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
import pickle
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

from vecset.contracts.abilities import DecodeSettings
from vecset.pipelines.config_errors import SettingError

log = logging.getLogger(__name__)


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


# -- resuming the run directory ---------------------------------------------------------
def wants_last_checkpoint(argv: list[str]) -> bool:
    """True when the command line asks to resume from ``--ckpt_path last``."""
    for i, a in enumerate(argv):
        if a == "--ckpt_path" and i + 1 < len(argv) and argv[i + 1] == "last":
            return True
        if a == "--ckpt_path=last":
            return True
    return False


def taken_versions(root: Path) -> list[int]:
    """The n of every ``version_<n>`` directory under ``root``."""
    return [int(m.group(1)) for p in Path(root).glob("version_*") if (m := re.fullmatch(r"version_(\d+)", p.name))]


def ckpt_path_arg(argv: list[str]) -> str | None:
    """The value of ``--ckpt_path`` on the command line (the last one), or None."""
    value = None
    for i, a in enumerate(argv):
        if a == "--ckpt_path" and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith("--ckpt_path="):
            value = a.split("=", 1)[1]
    return value


def run_of_checkpoint(path: str | os.PathLike, runs: Path | None = None) -> tuple[str, int] | None:
    """``(job, n)`` for a checkpoint in a run directory's ``<runs>/<job>/version_<n>/checkpoints/``
    (any runs folder when ``runs`` is None); None for any other path or URL."""
    if not isinstance(path, (str, os.PathLike)) or "://" in str(path):
        return None
    p = Path(path).absolute()
    version = p.parent.parent
    m = re.fullmatch(r"version_(\d+)", version.name)
    if p.parent.name != "checkpoints" or m is None or not version.parent.name:
        return None
    if runs is not None and os.path.normpath(version.parent.parent) != os.path.normpath(Path(runs).absolute()):
        return None
    return version.parent.name, int(m.group(1))


def has_last_checkpoint(version_dir: Path) -> bool:
    """``version_dir/checkpoints`` holds a ``last*.ckpt`` (what ``--ckpt_path last`` resumes)."""
    return any((Path(version_dir) / "checkpoints").glob("last*.ckpt"))


def resumed_version(argv: list[str], root: Path) -> int | None:
    """With ``--ckpt_path last``, the newest ``version_<n>`` under ``root`` that holds a last
    checkpoint (an older one's when a newer run stopped before saving any), which the run
    continues; None otherwise, also when no version holds one: a run stopped before its first
    checkpoint has nothing to resume, and the command starts a new run (Lightning says that it
    found no last checkpoint) rather than restarting in that run's folder over its logs.
    ``check_resume`` refuses the run found when it is another run or a finished one."""
    if not wants_last_checkpoint(argv):
        return None
    taken = sorted(taken_versions(root), reverse=True)
    version = next((n for n in taken if has_last_checkpoint(Path(root) / f"version_{n}")), None)
    if version is not None:
        log.info("--ckpt_path last: continuing %s/version_%d", root, version)
    return version


def resumed_run(argv: list[str], runs: Path) -> tuple[str, int] | None:
    """A fit resuming from a checkpoint file in a run directory (``--ckpt_path
    runs/<job>/version_<n>/checkpoints/last.ckpt``) continues that directory: ``(job, n)``, so
    its logs and metrics history stay in one folder; None for any other command line."""
    path = ckpt_path_arg(argv)
    if "fit" not in argv or path in (None, "last", "best", "hpc", "registry"):
        return None
    return run_of_checkpoint(path, runs)


# data settings that change how the data is loaded or cached, not what it is: a resume may change them
LOADING_ONLY = {"num_workers", "on_device", "device_memory_share", "cache", "cache_dir", "predict_files"}


def data_mismatch(saved: dict, current: dict) -> list[str]:
    """Differences between a run's saved ``data`` config (config.yaml) and this command's: the
    class, then arguments present in both with different values, but ``LOADING_ONLY``."""
    if not same_class(saved.get("class_path"), current.get("class_path")):
        return [f"data.class_path: the run has {saved.get('class_path')!r}, the config has {current.get('class_path')!r}"]
    a, b = _flatten(saved.get("init_args") or {}), _flatten(current.get("init_args") or {})
    return [f"data.init_args.{k}: the run has {a[k]!r}, the config has {b[k]!r}" for k in sorted(set(a) & set(b))
            if k.rsplit(".", 1)[-1] not in LOADING_ONLY and a[k] != b[k]]


def _model_hparams(model: dict) -> dict:
    """A config's ``model`` section in a checkpoint's hyperparameter form (``hparams_mismatch``)."""
    return {**(model.get("init_args") or {}), "_class_path": model.get("class_path")}


def check_resume(run_dir: Path, config: dict, ckpt_path: str, runs_of_job: Path | None = None) -> None:
    """Refuse a fit that would continue ``run_dir`` (``--ckpt_path last``, or a checkpoint file in
    it) when it is another run: its saved config.yaml has other data or model settings than
    ``config`` (this command's, as a run saves it; learning rate and the like may differ,
    ``TRAINING_ONLY``), or, for ``last``, when the run finished (its results.json is there): a
    resume would rewrite its config.yaml, trim its metrics and replace its results. Naming a
    finished run's checkpoint file continues it (to train it further), saying so. Raises
    ``SettingError`` (one ``error:`` line, exit 2) before anything is written."""
    run_dir = Path(run_dir)
    saved_file = run_dir / "config.yaml"
    diffs: list[str] = []
    if saved_file.is_file():
        import yaml

        saved = yaml.safe_load(saved_file.read_text()) or {}
        diffs = data_mismatch(saved.get("data") or {}, config.get("data") or {})
        for d in hparams_mismatch(_model_hparams(saved.get("model") or {}), _model_hparams(config.get("model") or {})):
            d = d.replace(": checkpoint has", ": the run has", 1)  # "model.<part>...": as the config spells it
            diffs.append(d if d.startswith("model.class_path") else d.replace("model.", "model.init_args.", 1))
    # the newer runs of the job that --ckpt_path last passed over (resumed_version): each stopped
    # before its first checkpoint
    n = int(run_dir.name.split("_")[1]) if re.fullmatch(r"version_\d+", run_dir.name) else None
    skipped = (sorted(v for v in taken_versions(runs_of_job) if v > n)
               if ckpt_path == "last" and runs_of_job is not None and n is not None else [])
    note = (f" ({', '.join(str(Path(runs_of_job) / f'version_{v}') for v in skipped)}, newer, holds no checkpoint: "
            "it stopped before its first one and has nothing to resume)") if skipped else ""
    if diffs:
        raise SettingError(
            f"--ckpt_path {ckpt_path}: {run_dir} is another run, with other data or model settings than this "
            f"command's: {'; '.join(diffs)}{note}. A resume continues a run with its own settings; for a new "
            "run leave --ckpt_path out")
    if (run_dir / "results.json").is_file():
        if ckpt_path == "last":
            raise SettingError(
                f"--ckpt_path last: {run_dir} finished (its results.json is there): there is nothing to resume"
                f"{note}. For a new run leave --ckpt_path out; to train that run further, name its checkpoint "
                f"(--ckpt_path {run_dir / 'checkpoints' / 'last.ckpt'}) with a larger --trainer.max_epochs or max_steps")
        print(f"vecset: {run_dir} had finished; it continues from {ckpt_path}, and its results.json and the metrics "
              "logged after that checkpoint are replaced", flush=True)


def claim_version(root: Path) -> int:
    """Create a new ``version_<n>`` directory under ``root`` and return n: the number after the
    highest one there, or the next free one when another run created that directory first.
    The directory is created exclusively (``mkdir`` fails if it exists), so two runs started
    together never share one (they did, and overwrote each other's checkpoints and logs)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    n = max(taken_versions(root), default=-1) + 1
    while True:
        try:
            (root / f"version_{n}").mkdir()
            return n
        except FileExistsError:
            n += 1


def remove_unused_run_dir(version_dir: Path) -> bool:
    """Remove a new run's ``version_<n>`` directory after its command failed, when it holds
    nothing but empty folders, TensorBoard's event files and the config saved at its start (no
    checkpoint, metrics or report: not one step ran), so that no empty run is left to be taken for
    the newest one. True when it was removed."""
    version_dir = Path(version_dir)
    if not version_dir.is_dir():
        return False
    files = [p for p in version_dir.rglob("*") if not p.is_dir()]
    if any(not p.name.startswith("events.out.tfevents.") and p != version_dir / "config.yaml" for p in files):
        return False
    import shutil

    shutil.rmtree(version_dir, ignore_errors=True)
    return not version_dir.exists()


# -- reading a checkpoint ---------------------------------------------------------------
class NotACheckpointError(ValueError):
    """A file given as a checkpoint that is not one."""


class UnsafeCheckpointError(ValueError):
    """A checkpoint that ``torch.load(weights_only=True)`` refused: unpickling it would run code."""


def unsafe_checkpoint_error(path, e: pickle.UnpicklingError) -> UnsafeCheckpointError:
    """The refusal, naming the file and the global torch would not import. torch's own text
    also advises re-running with ``weights_only=False``, i.e. running the file's code: that
    advice is left out."""
    found = re.search(r"GLOBAL (\S+)", str(e))  # "Unsupported global: GLOBAL io.open was not ..."
    what = f" (it refers to {found.group(1)}, which a checkpoint has no need of)" if found else ""
    return UnsafeCheckpointError(
        f"{path} was refused on purpose: loading it would run code stored in the file{what}. vecset "
        "loads checkpoints with torch.load(weights_only=True), which admits tensors and plain data only; "
        "the checkpoints vecset writes hold nothing else, so this file was written by other code or altered.")


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
    reads it. Raises ``NotACheckpointError`` naming the file and what it is instead, and
    ``UnsafeCheckpointError`` for a file whose unpickling would run code."""
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
    try:
        ckpt = torch.load(source, map_location="cpu", weights_only=True, mmap=isinstance(source, str))
    except pickle.UnpicklingError as e:
        raise unsafe_checkpoint_error(url, e) from None  # torch's text advises running the code
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
TRAINING_ONLY = {"lr", "weight_decay", "warmup", "lr_reference_batch", "lr_scaling", "schedule"}
# where a fit from scratch took its first weights (pipelines/training/warm_start.py): a run's own
# checkpoint has its weights, so these may differ or be left out (the file may be gone)
WARM_START_ONLY = {"init_from", "init_parts"}

def _import_class(path: str) -> Any:
    """The object a dotted class path names, or None when it does not import."""
    module, _, name = path.rpartition(".")
    if not module:
        return None
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def same_class(a: str, b: str) -> bool:
    """Two class paths name the same class: equal, or importing to one object
    (``vecset.pipelines.TaskModule`` is ``vecset.pipelines.training.task.TaskModule``)."""
    if a == b or not (isinstance(a, str) and isinstance(b, str)):
        return a == b
    ca = _import_class(a)
    return ca is not None and ca is _import_class(b)


def decode_settings(class_path: str) -> tuple[str, ...]:
    """The constructor arguments that class declares as decode-only (its ``decode_settings``,
    e.g. ``Seq2SeqHead``'s beam size): they change how a trained model's outputs are decoded,
    not its weights, so a checkpoint may be used with other values."""
    module, _, name = class_path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    return tuple(cls.decode_settings) if isinstance(cls, DecodeSettings) else ()


def hparams_mismatch(saved: dict, current: dict) -> list[str]:
    """Differences between the model config stored in a checkpoint and the current one: the
    module's own class (``_class_path``: a MultiTaskModule's checkpoint is not a TaskModule's;
    nothing else is compared then), a component whose class differs, reported once (its
    arguments are not compared), then arguments present in both with different values.
    Arguments present on one side only (an argument added to a class later, with a default),
    ``TRAINING_ONLY`` and a class's ``decode_settings`` are not differences."""
    saved_module, current_module = saved.get("_class_path"), current.get("_class_path")
    if saved_module and current_module and not same_class(saved_module, current_module):
        return [f"model.class_path: checkpoint has {saved_module!r}, the config has {current_module!r}"]
    a, b = _flatten(saved), _flatten(current)
    diffs, other_class, decode_only = [], [], set()
    # a decode setting may be a component itself (LabelingHead's decoder): everything under it
    under_decode = lambda k: any(k.startswith(f"{d}.") for d in decode_only)  # noqa: E731
    for key in sorted(k for k in set(a) & set(b) if k.endswith("class_path")):
        prefix = key[: -len("class_path")]
        if under_decode(key):
            continue
        if not same_class(a[key], b[key]):
            diffs.append(f"model.{key}: checkpoint has {a[key]!r}, the config has {b[key]!r}")
            other_class.append(prefix)
        else:
            decode_only |= {f"{prefix}init_args.{n}" for n in decode_settings(a[key])}
    for key in sorted(set(a) & set(b)):
        if (key in TRAINING_ONLY or key in WARM_START_ONLY or key in decode_only or under_decode(key) or key.endswith("class_path")
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


def check_checkpoint(path: str | os.PathLike, model: torch.nn.Module, weights: bool = True) -> None:
    """Raise ``CheckpointMismatchError`` naming every difference between the checkpoint at
    ``path`` and ``model`` (config, then parameters unless ``weights`` is False: a model whose
    parameters follow a vocabulary builds them when the checkpoint loads). Loads with
    ``weights_only=True`` (no code from the file runs) and ``mmap=True`` (tensors are mapped,
    not read)."""
    ckpt = read_checkpoint(path)
    current = dict(getattr(model, "hparams", {}) or {})
    current.setdefault("_class_path", f"{type(model).__module__}.{type(model).__qualname__}")
    diffs = hparams_mismatch(ckpt.get("hyper_parameters") or {}, current)
    if weights:
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
    time), which are now kept from the config; and it skipped the module's own class, so a
    MultiTaskModule's checkpoint silently replaced a TaskModule config (NaN losses), which is
    now refused naming both classes."""

    # the run directory this command continues (set by the vecset command for a resumed fit)
    resumes: Path | None = None

    def _parse_ckpt_path(self) -> None:
        sub = self.config.get("subcommand")
        if not sub:
            return
        path = self.config[sub].get("ckpt_path")
        if sub == "fit" and self.resumes is not None:
            # compared as the run saved its config (the same dump), before anything is written
            import yaml

            dumped = yaml.safe_load(self._subcommand_parsers[sub].dump(self.config[sub], skip_unset=False,
                                                                       skip_validation=True))
            check_resume(self.resumes, dumped, str(path), runs_of_job=Path(self.resumes).parent)
        # "last" is resolved by the trainer, which builds the config's model (as LightningCLI)
        from_config = path == "last"
        if from_config:
            path = self._newest_last_checkpoint(self.config[sub])
        if not path or not is_checkpoint_file(path):
            return  # Lightning's other names (best, hpc) and missing files: Lightning says
        saved = dict(read_checkpoint(path).get("hyper_parameters") or {})
        model = self.config[sub].get("model")
        config = model.as_dict() if hasattr(model, "as_dict") else dict(model or {})
        current = dict(config.get("init_args") or {})
        if "class_path" in config:  # the module's class: compared too
            current["_class_path"] = config["class_path"]
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

    def _run_subcommand(self, subcommand: str) -> None:
        """LightningCLI's, with torch's "Error(s) in loading state_dict" (the missing and
        unexpected parameter names, without the file) told as a ``CheckpointMismatchError``
        naming the checkpoint: its config matched (checked above), its parameters did not (a
        checkpoint of code whose parameters had other names). Compared after the failed load,
        when modules that build parameters from a checkpoint's vocabulary have built them."""
        try:
            super()._run_subcommand(subcommand)
        except RuntimeError as e:
            path = self.trainer.ckpt_path
            if "Error(s) in loading state_dict" not in str(e) or not path or not is_checkpoint_file(path):
                raise
            diffs = state_mismatch(read_checkpoint(path)["state_dict"], self.trainer.lightning_module)
            if not diffs:
                raise
            raise CheckpointMismatchError(
                f"the weights in checkpoint {path} do not fit the model of this config, although its "
                "config does:\n  - " + "\n  - ".join(diffs) + "\nThe checkpoint was written by code whose "
                "parameters had other names or shapes (another vecset version?): use that version, or "
                "rename the keys of its state_dict.") from None

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
