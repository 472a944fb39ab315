"""Running a model for a report: the batch on the model's device (and in its weights' dtype),
eval mode and no grad with every module's training mode restored after, and the test outputs
collected once per task.

This is the one place in the project that moves a batch to a device outside Lightning's own
loops (which do it for the training, validation, test and predict steps). A model trained in
``bf16-true`` or ``64-true`` holds bf16 or fp64 weights: as Lightning's precision plugins do
for its steps, the batch's floating tensors are cast to that dtype and tensors made inside the
forward get it as the default dtype; what the reports keep comes back to the CPU in fp32.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from lightning_utilities.core.apply_func import apply_to_collection
from pytorch_lightning.utilities import move_data_to_device
from torch import Tensor, nn


def to_device(batch, device: torch.device | str):
    """``batch`` (a dict, list or tensor, nested) with its tensors on ``device``; other values
    (word lists, SMILES) as they are."""
    return move_data_to_device(batch, device)


def weights_dtype(model: nn.Module) -> torch.dtype:
    """The dtype of ``model``'s floating weights: fp32, also under mixed precision (autocast keeps
    fp32 weights); bf16 / fp16 under ``bf16-true`` / ``16-true``; fp64 under ``64-true``."""
    return next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.get_default_dtype())


def to_model(batch, model: nn.Module):
    """``batch`` on ``model``'s device with its floating tensors in the model's weights' dtype
    (masks, labels and ids keep theirs), as Lightning's precision plugins give a step its batch."""
    dtype = weights_dtype(model)
    return apply_to_collection(to_device(batch, model.device), Tensor,
                               lambda t: t.to(dtype) if t.is_floating_point() else t)


def to_host(values):
    """``values`` (a tensor or a nested collection) on the CPU, floating tensors in fp32 (a bf16
    tensor has no NumPy form; a report needs no more than fp32)."""
    return apply_to_collection(to_device(values, "cpu"), Tensor,
                               lambda t: t.float() if t.is_floating_point() else t)


@contextmanager
def inference(model: nn.Module) -> Iterator[nn.Module]:
    """``model`` in eval mode under ``torch.no_grad()``, with its weights' dtype as the default
    dtype (tensors the forward makes, e.g. positions, match a bf16 or fp64 model's); afterwards
    every submodule is back in the mode it was in (a frozen part kept in eval stays in eval, the
    rest in training) and the default dtype is restored."""
    modes = [(m, m.training) for m in model.modules()]
    default = torch.get_default_dtype()
    model.eval()
    try:
        torch.set_default_dtype(weights_dtype(model))
        with torch.no_grad():
            yield model
    finally:
        torch.set_default_dtype(default)
        for m, training in modes:
            m.training = training


@dataclass(frozen=True)
class ScoredBatch:
    """One test batch and what the head scores for it.

    ``batch`` is the batch as the loader gave it (on the CPU); ``pred`` and ``target`` are the
    head's ``metric_inputs(out, batch)`` on the CPU (floating values in fp32): the very pairs the logged test metric
    counted (labels flattened over the vectors for a labeling head, (B,) labels for a
    classifier, values in target units for a regression head). ``output`` is the head's raw
    output on the CPU (a labeling head's logits (B, N, C)) when it was asked for, else None.
    """

    batch: dict
    pred: Tensor | list
    target: Tensor | list
    output: Tensor | None = None


def collect_test_outputs(model: nn.Module, loader: Iterable[dict], keep_output: bool = False) -> list[ScoredBatch]:
    """Run ``model`` (a TaskModule or a TaskView) over every batch of ``loader``; with
    ``keep_output`` each batch keeps the head's output too (memory: all of the split's)."""
    out = []
    with inference(model):
        for batch in loader:
            on_device = to_model(batch, model)
            raw = model(on_device)
            pred, target = model.head.metric_inputs(raw, on_device)
            out.append(ScoredBatch(batch, to_host(pred), to_host(target), to_host(raw) if keep_output else None))
    return out
