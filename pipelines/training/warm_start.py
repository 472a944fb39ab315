"""Warm start: a new run's model starts from the matching tensors of another run's checkpoint.

Distinct from resuming (``--ckpt_path``): only weights move, never the optimizer, the schedule,
the epoch or the step; the new run trains from epoch 0 with its own config. The checkpoint is read
when a fit starts from scratch (``start_fit``, from the module's ``on_fit_start``), never at
construction: a run's own checkpoint is enough to test, predict, export or resume it once the
``init_from`` file is gone, and a fit given ``--ckpt_path`` resumes, saying that ``init_from`` is
ignored. Per part
(``encoder``, ``backbone``, ``head``) each tensor of the model is

- ``loaded``: the checkpoint has the same name with the same shape,
- ``skipped``: the checkpoint has the name with another shape (e.g. a head with another number
  of outputs), the model's own initialization is kept,
- ``new``: the checkpoint does not have it (a pretext head's checkpoint has no regression head),

and one table with these counts per part is printed (``warm_start_table``). A part that is not
in ``parts`` is left as initialized. ``freeze`` stops the gradient of whole parts (say the
encoder and backbone of a pretrained model, training the head only).

A multi-task checkpoint (``MultiTaskModule``: ``backbone.*``, ``encoders.<task>.*``,
``heads.<task>.*``) gives its backbone; its per-task parts are matched when named
``encoders.<task>`` / ``heads.<task>`` in ``sources``. A ``MultiTaskModule`` warm-starts too: its
parts are ``backbone``, ``encoders.<task>`` and ``heads.<task>`` (``encoder`` / ``head``: every
task's); each task's encoder and head start from the checkpoint's part of the same task, or from
a single-task checkpoint's ``encoder`` / ``head`` (``multi_task_parts``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from torch import Tensor, nn

from vecset.pipelines.config_errors import MissingSettingFile, SettingError
from vecset.pipelines.training.checkpoint_files import (
    NotACheckpointError,
    UnsafeCheckpointError,
    read_checkpoint,
)
from vecset.pipelines.training.run_folders import run_of_checkpoint

log = logging.getLogger(__name__)

PARTS = ("encoder", "backbone", "head")


@dataclass
class PartLoad:
    """What a warm start did to one part: tensor names loaded, new (not in the checkpoint) and
    skipped (in the checkpoint with another shape), and the number of values loaded."""

    loaded: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    values: int = 0
    frozen: bool = False
    included: bool = True


def load_part(module: nn.Module, state: dict[str, Tensor], prefix: str) -> PartLoad:
    """Copy ``state``'s ``prefix``-ed tensors of the same name and shape into ``module``
    (parameters and buffers); the rest of ``module`` keeps its initialization."""
    sub = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    own = module.state_dict()
    out = PartLoad()
    take = {}
    for name, t in own.items():
        if name not in sub:
            out.new.append(name)
        elif tuple(sub[name].shape) != tuple(t.shape):
            out.skipped.append(f"{name} {tuple(sub[name].shape)} -> {tuple(t.shape)}")
        else:
            take[name] = sub[name]
            out.loaded.append(name)
            out.values += t.numel()
    module.load_state_dict(take, strict=False)
    return out


def check_names(parts: dict[str, nn.Module], given: list[str], what: str) -> None:
    bad = [p for p in given if p not in parts]
    if bad:
        raise ValueError(f"model.{what} names {bad}; the parts are {list(parts)}")


def check_warm_start_args(parts: dict[str, nn.Module], init_from: str | None, init_parts: list[str] | None,
                          freeze: list[str] | None) -> None:
    """The names in ``init_parts`` and ``freeze`` (at construction: nothing is read)."""
    check_names(parts, list(init_parts or []), "init_parts")
    check_names(parts, list(freeze or []), "freeze")
    if init_parts and not init_from:
        raise ValueError(f"model.init_parts={init_parts} needs init_from (the checkpoint to load them from)")
    if init_from and init_parts is not None and not list(init_parts):
        raise ValueError(f"model.init_parts is empty: name the parts init_from loads, of {list(parts)}, "
                         "or leave init_parts out to load them all")


def check_something_trains(module: nn.Module, freeze: list[str] | None) -> None:
    """Refuse a fit whose ``freeze`` leaves no parameter to train (the optimizer would get none)."""
    if freeze and not any(p.requires_grad for p in module.parameters()):
        raise ValueError(f"model.freeze={list(freeze)} leaves nothing to train: every parameter of the model is "
                         "frozen; leave at least one part (e.g. the head) out of freeze")


def start_fit(trainer, parts: dict[str, nn.Module], init_from: str | None, init_parts: list[str] | None,
              freeze: list[str] | None, sources: dict[str, str] | None = None) -> dict[str, PartLoad] | None:
    """A fit starting: the warm start from ``init_from`` when it starts from scratch; when it
    resumes (``trainer.ckpt_path``, restored before ``on_fit_start``) the run's own checkpoint has
    the weights, ``init_from`` is not read, and one line says so. The report, or None."""
    if not init_from:
        return None
    resumed = trainer.ckpt_path if trainer is not None else None
    if resumed:
        if trainer.is_global_zero:
            print(f"model.init_from {init_from} is ignored: the run resumes from {resumed} (its weights, "
                  "optimizer, epoch and step)", flush=True)
        return None
    return warm_start(parts, init_from, init_parts, freeze, sources)


def freeze_parts(parts: dict[str, nn.Module], names: list[str]) -> None:
    """``requires_grad=False`` on every parameter of the ``names`` parts."""
    check_names(parts, names, "freeze")
    for name in names:
        for p in parts[name].parameters():
            p.requires_grad_(False)


def as_tuple(source: str | tuple[str, ...]) -> tuple[str, ...]:
    return (source,) if isinstance(source, str) else tuple(source)


def source_prefix(state: dict[str, Tensor], source: str | tuple[str, ...]) -> str:
    """The first of ``source``'s prefixes that ``state`` has tensors under (the first if none)."""
    options = as_tuple(source)
    return next((p for p in options if any(k.startswith(p + ".") for k in state)), options[0])


def init_path(ckpt_path: str) -> str:
    """``init_from``'s file: the path from the working directory, else the shipped file of that
    relative path (``data/molecules/pretrained_moses_500k.ckpt`` from an installed wheel, as the
    shipped configs name it); a URL (``s3://...``) as it is. FileNotFoundError when neither exists."""
    from vecset.shipped import data_file

    if "://" in str(ckpt_path) and not str(ckpt_path).startswith("file://"):
        return ckpt_path
    return str(data_file(str(ckpt_path).removeprefix("file://"), "model.init_from"))


def warm_start(parts: dict[str, nn.Module], ckpt_path: str, init_parts: list[str] | None = None,
               freeze: list[str] | None = None,
               sources: dict[str, str | tuple[str, ...]] | None = None) -> dict[str, PartLoad]:
    """Load the matching tensors of ``ckpt_path`` into ``parts`` (name -> module), freeze the
    ``freeze`` parts, print the table; the per-part ``PartLoad``.

    Args:
        parts: the model's parts, ``{"encoder": ..., "backbone": ..., "head": ...}``.
        ckpt_path: a Lightning checkpoint (``read_checkpoint``: no code runs).
        init_parts: the parts to load (None: all of them).
        freeze: parts whose parameters get ``requires_grad=False`` (loaded or not).
        sources: part -> the checkpoint's prefix for it (default: the part's own name), e.g.
            ``{"head": "heads.solubility"}`` for a multi-task checkpoint; a tuple of prefixes:
            the first the checkpoint has (``("encoders.esol", "encoder")``: a multi-task
            checkpoint's encoder of that task, else a single-task checkpoint's encoder).
    """
    names = list(parts)
    check_warm_start_args(parts, ckpt_path, init_parts, freeze)
    init_parts = names if init_parts is None else list(init_parts)
    freeze = list(freeze or [])
    try:
        path = init_path(ckpt_path)
        ckpt = read_checkpoint(path)
    except FileNotFoundError:
        raise MissingSettingFile(f"model.init_from {ckpt_path}: no such file (the checkpoint a fit from scratch "
                                 "starts from; to continue a run, give its checkpoint as --ckpt_path), from the "
                                 f"working directory {Path.cwd()} or in the shipped data") from None
    except (NotACheckpointError, UnsafeCheckpointError) as e:
        raise SettingError(f"model.init_from: {e}") from e
    state = ckpt["state_dict"]
    sources = dict(sources or {})
    report: dict[str, PartLoad] = {}
    for name, module in parts.items():
        if name in init_parts:
            report[name] = load_part(module, state, source_prefix(state, sources.get(name, name)) + ".")
        else:
            report[name] = PartLoad(new=list(module.state_dict()), included=False)
    if not any(r.loaded for r in report.values()):
        wanted = sorted({p + ".*" for n in init_parts for p in as_tuple(sources.get(n, n))})
        raise SettingError(
            f"model.init_from {ckpt_path}: no tensor of init_parts {init_parts} matches this checkpoint"
            f"{describe_checkpoint(ckpt, ckpt_path)}\n"
            f"expected tensors named {', '.join(wanted)} with this model's names and shapes; the checkpoint's "
            f"prefixes are {sorted({k.split('.')[0] for k in state})}. Give a checkpoint of a run whose "
            "parts share this model's (e.g. a pretraining run of the same encoder and backbone).")
    freeze_parts(parts, freeze)
    for name in freeze:
        report[name].frozen = True
    text = warm_start_table(report, ckpt_path if path == str(ckpt_path) else f"{ckpt_path} ({path})")
    print(text)
    log.info("warm start: %s", {k: (len(r.loaded), len(r.new), len(r.skipped)) for k, r in report.items()})
    return report


def multi_task_parts(backbone: nn.Module, encoders: dict[str, nn.Module], heads: dict[str, nn.Module]
                     ) -> tuple[dict[str, nn.Module], dict[str, tuple[str, ...]]]:
    """A multi-task model's parts (``backbone``, ``encoders.<task>``, ``heads.<task>``) and where
    each is looked for in a checkpoint: the same name, else a single-task checkpoint's part."""
    parts: dict[str, nn.Module] = {"backbone": backbone}
    sources: dict[str, tuple[str, ...]] = {}
    for t in encoders:
        parts[f"encoders.{t}"], sources[f"encoders.{t}"] = encoders[t], (f"encoders.{t}", "encoder")
    for t in heads:
        parts[f"heads.{t}"], sources[f"heads.{t}"] = heads[t], (f"heads.{t}", "head")
    return parts, sources


def expand_part_names(parts: dict[str, nn.Module], names: list[str] | None, what: str) -> list[str] | None:
    """``names`` with ``encoder`` / ``head`` standing for every task's (``encoders.<task>`` ...);
    an unknown name is an error naming ``what`` (init_parts, freeze) and the parts."""
    if names is None:
        return None
    out: list[str] = []
    for n in names:
        group = [p for p in parts if p.startswith(f"{n}s.")] if n in ("encoder", "head") else [n]
        if n not in parts and not (n in ("encoder", "head") and group):
            raise ValueError(f"model.{what} names {n!r}; the parts are {list(parts)} (encoder, head: every task's)")
        out += [p for p in group if p not in out]
    return out


def describe_checkpoint(ckpt: dict, path: str) -> str:
    """Where a checkpoint comes from, as far as it says: its run (``runs/<job>/version_<n>``, from
    its path) and its module, encoder and head classes (its hyperparameters); "" if nothing."""
    what = []
    run = run_of_checkpoint(path)
    if run is not None:
        what.append(f"job {run[0]!r} (version_{run[1]})")
    hp = ckpt.get("hyper_parameters") or {}
    module = hp.get("_class_path")
    if isinstance(module, str):
        what.append(f"a {module.rsplit('.', 1)[-1]}")
    for key in ("encoder", "head", "encoders", "heads"):
        cls = hp.get(key, {}).get("class_path") if isinstance(hp.get(key), dict) else None
        if isinstance(cls, str):
            what.append(f"{key} {cls.rsplit('.', 1)[-1]}")
        elif isinstance(hp.get(key), dict) and key in ("encoders", "heads"):
            what.append(f"{key} of tasks {sorted(hp[key])}")
    return f" ({', '.join(what)})" if what else ""


def pretrained_on(ckpt_path: str) -> str | None:
    """The data file a checkpoint says it was pretrained on, or None: ``checkpoint["pretraining"]
    ["data"]`` (the shipped ``data/molecules/pretrained_moses_10k.ckpt``), or the
    ``pretraining_data`` of a data module's saved state (Lightning saves ``state_dict()`` under
    the data module's class name: a pretraining run's checkpoints)."""
    ckpt = read_checkpoint(init_path(ckpt_path))
    info = ckpt.get("pretraining")
    if isinstance(info, dict) and info.get("data"):
        return str(info["data"])
    found = [v["pretraining_data"] for v in ckpt.values() if isinstance(v, dict) and "pretraining_data" in v]
    return str(found[0]) if found else None


def warm_start_table(report: dict[str, PartLoad], ckpt_path: str) -> str:
    """One table: per part the tensors loaded / new / skipped (shape mismatch), values loaded,
    frozen or trained; then the skipped tensors by name (at most five per part)."""
    rows = [("part", "loaded", "new", "skipped", "values", "trained")]
    for name, r in report.items():
        rows.append((name if r.included else f"{name} (not asked)", str(len(r.loaded)), str(len(r.new)),
                     str(len(r.skipped)), f"{r.values:,}", "frozen" if r.frozen else "yes"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [f"warm start from {ckpt_path} (weights only: optimizer, epoch and step start afresh)"]
    for row in rows:
        lines.append("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                                      enumerate(zip(row, widths, strict=True))))
    for name, r in report.items():
        if r.skipped:
            lines.append(f"  {name} skipped (shape differs): " + "; ".join(r.skipped[:5])
                         + (" ..." if len(r.skipped) > 5 else ""))
    return "\n".join(lines)


__all__ = ["PARTS", "PartLoad", "check_names", "pretrained_on", "check_something_trains", "check_warm_start_args", "describe_checkpoint",
           "expand_part_names", "freeze_parts", "load_part", "multi_task_parts", "source_prefix", "start_fit",
           "warm_start", "warm_start_table"]
