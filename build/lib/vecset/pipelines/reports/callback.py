"""ReportWriter: the one callback that writes a run's reports and pictures.

It runs at the end of every test: ``vecset fit`` tests the best checkpoint after training
(so the reports describe that model), ``vecset test`` tests a given one. It writes

- ``curves.png`` of the run (training loss and every validation metric per epoch, a panel
  per task's metric in a multi-task run), from the CSV logger's metrics.csv;
- every task's reports: those its data module lists in ``reports()`` (a data module without
  that method gets none), into the run directory, or ``<run_dir>/<task>/`` for each task of
  a multi-task run. Each report sees its task as a single-task model (``TaskView``).

Figures are also added to TensorBoard when the trainer has a TensorBoardLogger. The CLI adds
this callback unless ``--plots false``; ``written`` holds the paths of the last test's files
(``results.json``'s ``plots``). Only the global-zero process writes.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytorch_lightning as pl
from pytorch_lightning.loggers import CSVLogger, TensorBoardLogger

from vecset.pipelines.reports.base import ReportContext
from vecset.pipelines.reports.curves import CurvesReport
from vecset.pipelines.training.multitask import MultiTaskModule

log = logging.getLogger(__name__)


def task_contexts(model: pl.LightningModule, datamodule, run_dir: Path, writers: list, step: int) -> list[ReportContext]:
    """One context per task: the model itself and its data module, or, for a MultiTaskModule,
    each task's view and data module with ``<run_dir>/<task>/`` as its folder."""
    if isinstance(model, MultiTaskModule):
        return [ReportContext(model.task_view(t), dm, run_dir / t, t, writers, step)
                for t, dm in datamodule.tasks.items()]
    return [ReportContext(model, datamodule, run_dir, None, writers, step)]


def write_reports(trainer: pl.Trainer, model: pl.LightningModule, datamodule, run_dir: Path) -> list[Path]:
    """curves.png of the run, then each task's reports; the paths written."""
    writers = [lg.experiment for lg in trainer.loggers if isinstance(lg, TensorBoardLogger)]
    step = trainer.global_step
    paths = []
    csv = next((Path(lg.log_dir) / "metrics.csv" for lg in trainer.loggers if isinstance(lg, CSVLogger)), None)
    if csv is not None:
        paths += CurvesReport(csv).write(ReportContext(model, datamodule, run_dir, None, writers, step))
    for ctx in task_contexts(model, datamodule, run_dir, writers, step):
        reports = ctx.data.reports() if hasattr(ctx.data, "reports") else []
        if reports:
            ctx.out_dir.mkdir(parents=True, exist_ok=True)
        for report in reports:
            paths += report.write(ctx)
    for w in writers:
        w.flush()
    return paths


class ReportWriter(pl.Callback):
    """Writes the reports after each test (see the module docstring)."""

    def __init__(self) -> None:
        self.written: list[Path] = []

    def on_test_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        run_dir = Path(trainer.log_dir)  # a broadcast under DDP: every process must ask
        if not trainer.is_global_zero or trainer.datamodule is None:
            return
        run_dir.mkdir(parents=True, exist_ok=True)
        self.written = write_reports(trainer, pl_module, trainer.datamodule, run_dir)
        log.info("reports: %s", ", ".join(str(p) for p in self.written))
