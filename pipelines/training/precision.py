"""``trainer.precision: auto``: the fastest precision this machine runs correctly.

bf16 mixed precision (``torch.autocast`` to bfloat16, weights and optimizer state in fp32)
where the hardware multiplies bf16 matrices natively: a CPU with AMX or AVX512-BF16, a CUDA
GPU that supports bf16 (Ampere and later). Elsewhere plain fp32 (``32-true``): a CPU without
bf16 units emulates bf16 through conversions and gains nothing. An explicit
``--trainer.precision 32-true`` (or any Lightning value) is used as given.

Mixed precision: Micikevicius et al., "Mixed Precision Training", ICLR 2018
(https://arxiv.org/abs/1710.03740); Lightning's names: https://lightning.ai/docs/pytorch/stable/common/precision_basic.html
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

AUTO = "auto"
# set to a Lightning precision, it replaces what ``auto`` resolves to on this machine (e.g.
# VECSET_AUTO_PRECISION=32-true keeps every auto run in fp32; the test suite sets it so its seeded
# values do not depend on the machine it runs on); an explicit trainer.precision still wins
ENV = "VECSET_AUTO_PRECISION"


@dataclass(frozen=True)
class PrecisionChoice:
    precision: str  # what the Trainer gets: "bf16-mixed", "32-true", or the value given
    reason: str

    def line(self) -> str:
        return f"precision: {self.precision} ({self.reason})"

    def as_dict(self) -> dict:
        return {"precision": self.precision, "precision_reason": self.reason}


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


def resolve_precision(precision, accelerator="auto") -> PrecisionChoice:
    """What the Trainer runs in for ``trainer.precision`` = ``precision`` (``auto`` or None: choose)."""
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
        if units:
            return PrecisionChoice("bf16-mixed", f"auto: this CPU has bf16 matrix units ({', '.join(units)})")
        return PrecisionChoice("32-true", "auto: this CPU has no bf16 matrix units (AMX or AVX512-BF16)")
    return PrecisionChoice("32-true", f"auto: fp32 on the {kind} accelerator")
