"""Warm start: a new run's model starts from the matching tensors of another run's checkpoint.

Distinct from resuming (``--ckpt_path``): only weights move, never the optimizer, the schedule,
the epoch or the step; the new run trains from epoch 0 with its own config. Per part
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
``encoders.<task>`` / ``heads.<task>`` in ``sources``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from torch import Tensor, nn

from vecset.pipelines.training.checkpoint import read_checkpoint

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
        raise ValueError(f"{what} names {bad}; the parts are {list(parts)}")


def freeze_parts(parts: dict[str, nn.Module], names: list[str]) -> None:
    """``requires_grad=False`` on every parameter of the ``names`` parts."""
    check_names(parts, names, "freeze")
    for name in names:
        for p in parts[name].parameters():
            p.requires_grad_(False)


def warm_start(parts: dict[str, nn.Module], ckpt_path: str, init_parts: list[str] | None = None,
               freeze: list[str] | None = None, sources: dict[str, str] | None = None) -> dict[str, PartLoad]:
    """Load the matching tensors of ``ckpt_path`` into ``parts`` (name -> module), freeze the
    ``freeze`` parts, print the table; the per-part ``PartLoad``.

    Args:
        parts: the model's parts, ``{"encoder": ..., "backbone": ..., "head": ...}``.
        ckpt_path: a Lightning checkpoint (``read_checkpoint``: no code runs).
        init_parts: the parts to load (None: all of them).
        freeze: parts whose parameters get ``requires_grad=False`` (loaded or not).
        sources: part -> the checkpoint's prefix for it (default: the part's own name), e.g.
            ``{"head": "heads.solubility"}`` for a multi-task checkpoint.
    """
    names = list(parts)
    init_parts = names if init_parts is None else list(init_parts)
    freeze = list(freeze or [])
    check_names(parts, init_parts, "init_parts")
    check_names(parts, freeze, "freeze")
    state = read_checkpoint(ckpt_path)["state_dict"]
    sources = dict(sources or {})
    report: dict[str, PartLoad] = {}
    for name, module in parts.items():
        if name in init_parts:
            report[name] = load_part(module, state, sources.get(name, name) + ".")
        else:
            report[name] = PartLoad(new=list(module.state_dict()), included=False)
    if not any(r.loaded for r in report.values()):
        raise ValueError(f"warm start from {ckpt_path}: no tensor of {init_parts} matches the checkpoint "
                         f"(its prefixes: {sorted({k.split('.')[0] for k in state})})")
    freeze_parts(parts, freeze)
    for name in freeze:
        report[name].frozen = True
    text = warm_start_table(report, ckpt_path)
    print(text)
    log.info("warm start: %s", {k: (len(r.loaded), len(r.new), len(r.skipped)) for k, r in report.items()})
    return report


def pretrained_on(ckpt_path: str) -> str | None:
    """The data file a checkpoint says it was pretrained on, or None: ``checkpoint["pretraining"]
    ["data"]`` (the shipped ``data/molecules/pretrained_moses_10k.ckpt``), or the
    ``pretraining_data`` of a data module's saved state (Lightning saves ``state_dict()`` under
    the data module's class name: a pretraining run's checkpoints)."""
    ckpt = read_checkpoint(ckpt_path)
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


__all__ = ["PARTS", "PartLoad", "check_names", "freeze_parts", "load_part", "warm_start", "warm_start_table"]
