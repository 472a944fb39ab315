"""Running a model for a report: the batch on the model's device, eval mode and no grad with
every module's training mode restored after, and the test outputs collected once per task.

This is the one place in the project that moves a batch to a device outside Lightning's own
loops (which do it for the training, validation, test and predict steps).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from pytorch_lightning.utilities import move_data_to_device
from torch import Tensor, nn


def to_device(batch, device: torch.device | str):
    """``batch`` (a dict, list or tensor, nested) with its tensors on ``device``; other values
    (word lists, SMILES) as they are."""
    return move_data_to_device(batch, device)


@contextmanager
def inference(model: nn.Module) -> Iterator[nn.Module]:
    """``model`` in eval mode under ``torch.no_grad()``; afterwards every submodule is back in
    the mode it was in (a frozen part kept in eval stays in eval, the rest in training)."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        for m, training in modes:
            m.training = training


@dataclass(frozen=True)
class ScoredBatch:
    """One test batch and what the head scores for it.

    ``batch`` is the batch as the loader gave it (on the CPU); ``pred`` and ``target`` are the
    head's ``metric_inputs(out, batch)`` on the CPU: the very pairs the logged test metric
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
            on_device = to_device(batch, model.device)
            raw = model(on_device)
            pred, target = model.head.metric_inputs(raw, on_device)
            out.append(ScoredBatch(batch, to_device(pred, "cpu"), to_device(target, "cpu"),
                                   to_device(raw, "cpu") if keep_output else None))
    return out
