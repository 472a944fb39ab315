"""``CompileModel``: the model's parts compiled with ``torch.compile`` for a fit, an option.

A small model's step on a GPU is bound by kernel launches, not arithmetic (issue #44: the
Fashion-MNIST step alone ran 66 steps/s eager, 74 compiled on an H200); TorchInductor fuses the
elementwise work into fewer kernels, and ``mode="reduce-overhead"`` replays the step's kernels as
CUDA graphs (one launch). The compiled code computes the same function (to float rounding), so
results are the eager model's; compiling costs time at the first steps (and at each new input
shape: variable-length sets are recompiled once with dynamic shapes).

Off by default: on a CPU it does not pay for the shipped jobs (docs/benchmarks.md). Turned on
in a config by listing the callback::

    trainer:
      callbacks:
        - class_path: vecset.pipelines.CompileModel
          init_args: {mode: default}   # or reduce-overhead (CUDA graphs), max-autotune

Each part (encoder, backbone, head; each task's in a multi-task run) is compiled in place with
``nn.Module.compile``: parameter names, checkpoints and ``vecset export`` stay as they are. The
loss, metrics, optimizer and Lightning's loop stay eager.
"""

from __future__ import annotations

import logging
from typing import Literal

import pytorch_lightning as pl
from pytorch_lightning.callbacks import Callback
from torch import nn

log = logging.getLogger("vecset")

Mode = Literal["default", "reduce-overhead", "max-autotune"]


def compiled_parts(module: pl.LightningModule) -> dict[str, nn.Module]:
    """The parts a fit compiles, by name: a TaskModule's ``encoder``/``backbone``/``head``, a
    MultiTaskModule's shared ``backbone`` and each task's encoder and head."""
    # imported here: task.py and multitask.py import the callbacks' package
    from vecset.pipelines.training.multitask import MultiTaskModule
    from vecset.pipelines.training.task import TaskModule

    if isinstance(module, TaskModule):
        return {"encoder": module.encoder, "backbone": module.backbone, "head": module.head}
    if isinstance(module, MultiTaskModule):
        return {"backbone": module.backbone, **{f"encoders.{t}": m for t, m in module.encoders.items()},
                **{f"heads.{t}": m for t, m in module.heads.items()}}
    raise TypeError(f"CompileModel compiles a TaskModule's or MultiTaskModule's parts, not a {type(module).__name__}")


class CompileModel(Callback):
    """Compile the model's parts with ``torch.compile(mode=mode)`` when a fit, validation or
    test sets up (once per part).

    Args:
        mode: ``default`` (TorchInductor's fused kernels), ``reduce-overhead`` (and CUDA graphs:
            on a GPU, fewest launches; its memory is kept between steps), ``max-autotune``
            (searches kernel configurations: a long first compile).
        dynamic: passed to ``torch.compile`` (None: static shapes first, dynamic after a
            shape changes).
    """

    def __init__(self, mode: Mode = "default", dynamic: bool | None = None) -> None:
        if mode not in ("default", "reduce-overhead", "max-autotune"):
            raise ValueError(f"CompileModel mode must be default, reduce-overhead or max-autotune, got {mode!r}")
        self.mode, self.dynamic = mode, dynamic
        self.compiled: list[str] = []

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        parts = compiled_parts(pl_module)
        for name, part in parts.items():
            if name not in self.compiled:
                part.compile(mode=self.mode, dynamic=self.dynamic)
                self.compiled.append(name)
        log.info("torch.compile (mode %s): %s", self.mode, ", ".join(self.compiled))
