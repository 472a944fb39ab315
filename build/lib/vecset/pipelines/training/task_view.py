"""TaskView: one task of a MultiTaskModule, seen as a single-task model.

Reports (``pipelines/reports``) read one task at a time through the surface a TaskModule
has: ``model(batch)``, ``.encoder``, ``.backbone``, ``.head``, ``.device``, ``.train()`` /
``.eval()``. A TaskModule is its own view; a MultiTaskModule gives one per task.
"""

from __future__ import annotations

import torch
from torch import nn


class TaskView(nn.Module):
    """The shared backbone with one task's encoder and head.

    Args:
        model: a MultiTaskModule (anything with ``backbone``, ``encoders``, ``heads`` and a
            ``forward(task, batch)``).
        task: the task's name.

    ``view(batch)`` is ``model(task, batch)``: the multi-task model's own forward, so what
    a report computes is what the test step scored. The three modules are the model's own
    (no copy); ``view.eval()`` / ``view.train()`` switch only them, not the other tasks'.

    Shapes:
        as the task's encoder and head: raw batch -> the head's output.
    """

    def __init__(self, model: nn.Module, task: str) -> None:
        super().__init__()
        self.task = task
        self.encoder, self.backbone, self.head = model.encoders[task], model.backbone, model.heads[task]
        # not a registered submodule: the view must not own (nor .train()) the other tasks
        object.__setattr__(self, "_model", model)
        self.training = model.training  # the flag only: the modules keep their own modes

    @property
    def device(self) -> torch.device:
        return self._model.device

    def forward(self, batch: dict):
        return self._model(self.task, batch)
