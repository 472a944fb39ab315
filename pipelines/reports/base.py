"""The report contract: what a report sees of one task, and what it gives back.

A report is a small object with ``write(ctx) -> list[Path]``: it reads the task through
``ctx`` (the model view, the task's data module, the test outputs), writes its files into
``ctx.out_dir`` and returns their paths. Figures go through ``ctx.save_figure`` /
``ctx.save_image``, which write the file and add the picture to TensorBoard when the run
has a TensorBoardLogger. ``ReportWriter`` (callback.py) builds the contexts and runs the
reports it is configured with (defaults per job: defaults.py).

What a report may read: the test pass (``ctx.test_outputs()``, run once per task and shared
by all its reports), the test items (``ctx.test_items(n)``, the data module's
``test_items()``), the data module's public names (``class_names``, ``target_names``,
``collate``, ``describe``, ...) and the model's parts through the abilities they declare
(``contracts/abilities.py``), never a private attribute or a split's internals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from torch import nn  # noqa: E402

from vecset.pipelines.reports.outputs import ScoredBatch, collect_test_outputs  # noqa: E402


@dataclass
class ReportContext:
    """One task, as its reports see it.

    Args:
        model: the task as a single-task model: a TaskModule, or a MultiTaskModule's
            ``task_view(task)`` (``model(batch)``, ``.encoder``, ``.backbone``, ``.head``,
            ``.device``).
        data: the task's data module (its test split is set up).
        out_dir: where the task's files go (the run directory; ``<run>/<task>/`` in a
            multi-task run).
        task: the task's name in a multi-task run, else None (TensorBoard tags start with it).
        writers: TensorBoard ``SummaryWriter``s that get every figure (none: files only).
        step: the global step the figures are logged at.
    """

    model: nn.Module | None
    data: Any
    out_dir: Path
    task: str | None = None
    writers: list = field(default_factory=list)
    step: int = 0
    _outputs: list[ScoredBatch] | None = field(default=None, init=False, repr=False)

    def test_outputs(self) -> list[ScoredBatch]:
        """The test split run through the model once, with the head's raw outputs, then kept:
        every report of the task reads this one pass."""
        if self._outputs is None:
            self._outputs = collect_test_outputs(self.model, self.data.test_dataloader(), keep_output=True)
        return self._outputs

    def test_items(self, n: int | None = None) -> list:
        """The first ``n`` (None: all) of the data module's ``test_items()``."""
        items = self.data.test_items()
        return [items[i] for i in range(len(items) if n is None else min(n, len(items)))]

    def tag(self, name: str) -> str:
        stem = Path(name).stem
        return f"{self.task}/{stem}" if self.task else f"reports/{stem}"

    def save_figure(self, fig, name: str, dpi: int = 100) -> Path:
        """Write a matplotlib figure as ``out_dir/name``, log it to TensorBoard, close it."""
        path = self.out_dir / name
        fig.savefig(path, dpi=dpi)
        for w in self.writers:
            w.add_figure(self.tag(name), fig, global_step=self.step, close=False)
        plt.close(fig)
        return path

    def save_image(self, image, name: str) -> Path:
        """Write a PIL image as ``out_dir/name`` and log it to TensorBoard."""
        path = self.out_dir / name
        image.save(path)
        for w in self.writers:
            w.add_image(self.tag(name), np.asarray(image.convert("RGB")), global_step=self.step, dataformats="HWC")
        return path


class Report:
    """One report of one task. Subclasses take their settings as typed constructor arguments
    and implement ``write``."""

    def write(self, ctx: ReportContext) -> list[Path]:
        """Write the report's files into ``ctx.out_dir``; return their paths (none when the
        report does not apply, e.g. no attention to plot)."""
        raise NotImplementedError(f"{type(self).__name__} defines no write(ctx)")
