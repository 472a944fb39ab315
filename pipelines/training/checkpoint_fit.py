"""Does a checkpoint fit the config? The differences between the model config a checkpoint
stores and this command's (class, arguments; training-only and decode-only settings may
differ), and between its weights and the model's parameters, each listed in one error.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import torch

from vecset.contracts.abilities import DecodeSettings
from vecset.pipelines.training.checkpoint_files import read_checkpoint


def flat_settings(d: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as ``{"a.b.c": value}`` (bookkeeping keys, ``_...``, left out)."""
    if isinstance(d, dict):
        out: dict[str, Any] = {}
        for k, v in d.items():
            if not str(k).startswith("_"):  # _instantiator, _class_path: bookkeeping
                out.update(flat_settings(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: d}


# may differ on purpose (another learning rate to fine-tune); taken from the checkpoint
TRAINING_ONLY = {"lr", "weight_decay", "warmup", "lr_reference_batch", "lr_scaling", "schedule"}
# where a fit from scratch took its first weights (pipelines/training/warm_start.py): a run's own
# checkpoint has its weights, so these may differ or be left out (the file may be gone)
WARM_START_ONLY = {"init_from", "init_parts"}
# how a trained model is evaluated, not its weights: a checkpoint may be validated or tested with
# another value (TaskModule's test-time flip)
EVAL_ONLY = {"test_time_flip"}

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
    ``TRAINING_ONLY``, ``EVAL_ONLY`` and a class's ``decode_settings`` are not differences."""
    saved_module, current_module = saved.get("_class_path"), current.get("_class_path")
    if saved_module and current_module and not same_class(saved_module, current_module):
        return [f"model.class_path: checkpoint has {saved_module!r}, the config has {current_module!r}"]
    a, b = flat_settings(saved), flat_settings(current)
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
        if (key in TRAINING_ONLY or key in WARM_START_ONLY or key in EVAL_ONLY or key in decode_only or under_decode(key) or key.endswith("class_path")
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
