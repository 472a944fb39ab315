"""``trainer.precision: auto``: the fastest precision this machine runs correctly.

bf16 mixed precision (``torch.autocast`` to bfloat16, weights and optimizer state in fp32)
where the hardware multiplies bf16 matrices natively: a CPU with AMX or AVX512-BF16, a CUDA
GPU that supports bf16 (Ampere and later). Elsewhere plain fp32 (``32-true``): a CPU without
bf16 units emulates bf16 through conversions and gains nothing. On a CPU, a model narrower than
``MIN_BF16_WIDTH`` also runs fp32: at d_model 64 the casts and elementwise work outweigh the
faster matmuls (the FreeSolv and G2P steps ran 0.80-0.98x fp32 in bf16, and FreeSolv's test RMSE
was worse), while at d_model 128 the backbone step ran 1.22-1.44x (docs/benchmarks.md). An
explicit ``--trainer.precision 32-true`` (or any Lightning value) is used as given; what the
Trainer then runs is recorded (``ran_as``: Lightning runs ``16-mixed`` as ``bf16-mixed`` on a CPU).

Mixed precision: Micikevicius et al., "Mixed Precision Training", ICLR 2018
(https://arxiv.org/abs/1710.03740); Lightning's names: https://lightning.ai/docs/pytorch/stable/common/precision_basic.html
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import torch

if TYPE_CHECKING:
    from pytorch_lightning.cli import LightningArgumentParser

AUTO = "auto"
# set to a Lightning precision, it replaces what ``auto`` resolves to on this machine (e.g.
# VECSET_AUTO_PRECISION=32-true keeps every auto run in fp32; the test suite sets it so its seeded
# values do not depend on the machine it runs on); an explicit trainer.precision still wins
ENV = "VECSET_AUTO_PRECISION"
# the narrowest backbone (d_model) that auto runs in bf16 on a CPU
MIN_BF16_WIDTH = 128


@dataclass(frozen=True)
class PrecisionChoice:
    precision: str  # what the Trainer gets: "bf16-mixed", "32-true", or the value given (after ran_as: what it runs)
    reason: str
    asked: str | None = None  # the value given, when the Trainer runs another (ran_as)

    def line(self) -> str:
        return f"precision: {self.precision} ({self.reason})"

    def as_dict(self) -> dict:
        asked = {} if self.asked is None else {"precision_asked": self.asked}
        return {"precision": self.precision, "precision_reason": self.reason, **asked}


def ran_as(choice: PrecisionChoice, ran: str) -> PrecisionChoice:
    """``choice`` as the Trainer runs it (``trainer.precision``): Lightning spells a short name
    out (``32`` is ``32-true``, ``bf16`` is ``bf16-mixed``) and replaces what the device cannot run
    (``16-mixed`` on a CPU runs ``bf16-mixed``); the latter is said in the reason."""
    from lightning_fabric.plugins.precision.precision import (
        _PRECISION_INPUT_STR_ALIAS_CONVERSION as ALIASES,
    )

    if ran == choice.precision or ran == ALIASES.get(choice.precision):
        return PrecisionChoice(ran, choice.reason)
    return PrecisionChoice(ran, f"{choice.precision} was asked: Lightning runs {ran} instead on this device",
                           asked=choice.precision)


def backbone_width(model) -> int | None:
    """The d_model of a TaskModule's or MultiTaskModule's backbone (``Width``: Backbone and the
    baselines); None for another module or a backbone that declares no width."""
    from vecset.contracts.abilities import Width
    from vecset.pipelines.training.multitask import MultiTaskModule
    from vecset.pipelines.training.task import TaskModule

    if isinstance(model, TaskModule | MultiTaskModule) and isinstance(model.backbone, Width):
        return int(model.backbone.d_model)
    return None


def cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none: macOS, Windows)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_bf16_units() -> list[str]:
    """The CPU's bf16 matrix units, by torch's own probes (the ones its oneDNN kernels go by),
    else /proc/cpuinfo's flags: ``["AMX", "AVX512-BF16"]``, one of them, or ``[]``."""
    probes = {"AMX": getattr(torch.cpu, "_is_amx_tile_supported", None),
              "AVX512-BF16": getattr(torch.cpu, "_is_avx512_bf16_supported", None)}
    if all(p is not None for p in probes.values()):
        return [name for name, probe in probes.items() if probe()]
    flags = cpu_flags()
    return [name for name, flag in (("AMX", "amx_bf16"), ("AVX512-BF16", "avx512_bf16")) if flag in flags]


def cuda_bf16_supported() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def _device_kind(accelerator) -> str:
    """'cuda', 'cpu' or another accelerator's name, as the Trainer will pick it."""
    if accelerator is None or accelerator == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if isinstance(accelerator, str):
        return "cuda" if accelerator in ("gpu", "cuda") else accelerator
    from pytorch_lightning.accelerators import CPUAccelerator, CUDAAccelerator

    if isinstance(accelerator, CUDAAccelerator):
        return "cuda"
    return "cpu" if isinstance(accelerator, CPUAccelerator) else type(accelerator).__name__


def resolve_precision(precision, accelerator="auto", width: int | None = None) -> PrecisionChoice:
    """What the Trainer runs in for ``trainer.precision`` = ``precision`` (``auto`` or None: choose)
    with a backbone of ``width`` (d_model; None: unknown, not a reason for fp32)."""
    if precision not in (None, AUTO):
        return PrecisionChoice(str(precision), "set in the config or on the command line")
    override = os.environ.get(ENV)
    if override:
        return PrecisionChoice(override, f"auto, from ${ENV}")
    kind = _device_kind(accelerator)
    if kind == "cuda":
        if cuda_bf16_supported():
            return PrecisionChoice("bf16-mixed", f"auto: the GPU ({torch.cuda.get_device_name()}) supports bf16")
        return PrecisionChoice("32-true", "auto: the GPU does not support bf16")
    if kind == "cpu":
        units = cpu_bf16_units()
        if units and width is not None and width < MIN_BF16_WIDTH:
            return PrecisionChoice("32-true", f"auto: d_model {width} < {MIN_BF16_WIDTH}: at this width bf16 is no "
                                              f"faster on this CPU's bf16 units ({', '.join(units)}) and less accurate")
        if units:
            return PrecisionChoice("bf16-mixed", f"auto: this CPU has bf16 matrix units ({', '.join(units)})"
                                   + ("" if width is None else f" and d_model {width} >= {MIN_BF16_WIDTH}"))
        return PrecisionChoice("32-true", "auto: this CPU has no bf16 matrix units (AMX or AVX512-BF16)")
    return PrecisionChoice("32-true", f"auto: fp32 on the {kind} accelerator")


def accept_auto_precision(parser: LightningArgumentParser) -> None:
    """``trainer.precision`` takes ``auto`` too, and defaults to it (pipelines/training/precision.py);
    Lightning's own values are checked as before."""
    action = next(a for a in parser._actions if a.dest == "trainer.precision")
    action._typehint = Literal[AUTO] | action._typehint  # jsonargparse's ActionTypeHint checks values against it
    action.default = AUTO
    action.help = ("auto (the default): bf16-mixed where the CPU has bf16 matrix units (AMX, AVX512-BF16) and "
                   "the backbone's d_model is at least 128, or the GPU supports bf16, else 32-true; or one of "
                   "Lightning's values, e.g. 32-true")
