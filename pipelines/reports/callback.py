"""ReportWriter: the one callback that writes a run's reports and pictures.

It runs at the end of every test: ``vecset fit`` tests the best checkpoint after training
(so the reports describe that model), ``vecset test`` tests a given one. It writes

- ``curves.png`` of the run (training loss and every validation metric per epoch, a panel
  per task's metric in a multi-task run), from the CSV logger's metrics.csv;
- every task's reports, into the run directory, or ``<run_dir>/<task>/`` for each task of
  a multi-task run. Each report sees its task as a single-task model (``TaskView``); the
  task's test split runs through the model once, and every report reads that pass.

Which reports: ``reports``, a list (a single-task run) or a dict task -> list (a multi-task
run; a task it leaves out gets its defaults), else the job's defaults
(``defaults.py``, by the data module's class). In a config, as a trainer callback::

    trainer:
      callbacks:
        - class_path: vecset.pipelines.reports.callback.ReportWriter
          init_args:
            reports:
              - class_path: vecset.pipelines.reports.classification.ClassificationReport
              - class_path: vecset.pipelines.images.reports.AttentionMapsReport
                init_args: {images: 4}

Figures are also added to TensorBoard when the trainer has a TensorBoardLogger. The CLI adds
this callback with the defaults unless one is configured or ``--plots false``; ``written``
holds the paths of the last test's files (``results.json``'s ``plots``). A report that fails is
named in a warning and the others are still written (``failed``, ``results.json``'s
``failed_reports``): a report's bug never costs the run's results. Only the global-zero process
writes.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytorch_lightning as pl
from pytorch_lightning.loggers import CSVLogger, TensorBoardLogger

from vecset.pipelines.reports.base import Report, ReportContext
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


Reports = list[Report] | dict[str, list[Report]] | None


def task_reports(reports: Reports, ctx: ReportContext) -> list[Report]:
    """The reports of ``ctx``'s task: the configured ones, or the job's defaults."""
    if isinstance(reports, dict):
        if ctx.task is None:
            raise ValueError("ReportWriter's reports is a dict of tasks, but this run has one task: give a list")
        if ctx.task in reports:
            return list(reports[ctx.task])
    elif reports is not None:
        if ctx.task is not None:
            raise ValueError(f"ReportWriter's reports is a list, but this run has several tasks (e.g. {ctx.task!r}): "
                             "give a dict task -> list (a task left out gets its defaults)")
        return list(reports)
    # imported when writing: the reports' own imports (RDKit drawing, speech scoring) wait till then
    from vecset.pipelines.reports.defaults import default_reports

    return default_reports(ctx.data)


def write_task_reports(reports: list[Report], ctx: ReportContext, failed: list[str]) -> list[Path]:
    """Each of ``reports`` for ``ctx``'s task; the paths written. One that raises is named in a
    warning (its traceback in the log) and in ``failed`` (``<task>/<Report>`` in a multi-task
    run), and the next one runs."""
    paths = []
    for report in reports:
        try:
            paths += report.write(ctx)
        except Exception as e:  # noqa: BLE001 - any report's bug: named, and the run's results kept
            name = type(report).__name__ if ctx.task is None else f"{ctx.task}/{type(report).__name__}"
            failed.append(name)
            first = (str(e).splitlines() or [""])[0]
            log.debug("report %s failed", name, exc_info=True)
            warnings.warn(f"report {name} failed ({type(e).__name__}: {first}); the run's other reports and "
                          "results.json are written", UserWarning, stacklevel=2)
    return paths


def write_reports(trainer: pl.Trainer, model: pl.LightningModule, datamodule, run_dir: Path,
                  reports: Reports = None, failed: list[str] | None = None) -> list[Path]:
    """curves.png of the run, then each task's reports (``reports``, or the defaults); the paths
    written. Reports that fail are appended to ``failed`` by name (``write_task_reports``)."""
    failed = [] if failed is None else failed
    writers = [lg.experiment for lg in trainer.loggers if isinstance(lg, TensorBoardLogger)]
    step = trainer.global_step
    paths = []
    csv = next((Path(lg.log_dir) / "metrics.csv" for lg in trainer.loggers if isinstance(lg, CSVLogger)), None)
    if csv is not None:
        paths += write_task_reports([CurvesReport(csv)], ReportContext(model, datamodule, run_dir, None, writers, step),
                                    failed)
    for ctx in task_contexts(model, datamodule, run_dir, writers, step):
        chosen = task_reports(reports, ctx)
        if chosen:
            ctx.out_dir.mkdir(parents=True, exist_ok=True)
        paths += write_task_reports(chosen, ctx, failed)
    for w in writers:
        w.flush()
    return paths


class ReportWriter(pl.Callback):
    """Writes the reports after each test (see the module docstring).

    Args:
        reports: the reports to write: a list (one task), a dict task -> list (a multi-task
            run), or None: each task's defaults (``defaults.py``).
    """

    def __init__(self, reports: list[Report] | dict[str, list[Report]] | None = None) -> None:
        self.reports = reports
        self.written: list[Path] = []
        self.failed: list[str] = []  # the reports of the last test that raised, by name

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        """A list in a multi-task run (or a dict in a single-task one) is refused before any step."""
        multi = isinstance(pl_module, MultiTaskModule)
        if isinstance(self.reports, dict) and not multi:
            raise ValueError("ReportWriter's reports is a dict of tasks, but this run has one task: give a list")
        if isinstance(self.reports, dict) and (unknown := sorted(set(self.reports) - set(pl_module.tasks))):
            raise ValueError(f"ReportWriter's reports name tasks {unknown} the model does not have "
                             f"(its tasks: {sorted(pl_module.tasks)})")
        if self.reports is not None and not isinstance(self.reports, dict) and multi:
            raise ValueError("ReportWriter's reports is a list, but this run has several tasks: give a dict "
                             "task -> list (a task left out gets its defaults)")

    def on_test_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        run_dir = Path(trainer.log_dir)  # a broadcast under DDP: every process must ask
        if not trainer.is_global_zero or trainer.datamodule is None:
            return
        run_dir.mkdir(parents=True, exist_ok=True)
        self.failed = []
        self.written = write_reports(trainer, pl_module, trainer.datamodule, run_dir, self.reports, self.failed)
        log.info("reports: %s", ", ".join(str(p) for p in self.written))
