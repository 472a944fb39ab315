"""metrics.csv survives a resume: ``HistoryCSVLogger`` appends to the file it finds, and
``TrimMetricsHistory`` drops the rows a resumed fit logs again.

Lightning 2.6's CSV logger (``lightning_fabric.loggers.csv_logs._ExperimentWriter``) deletes
an existing ``metrics.csv`` when it opens its directory ("Previous log files in this
directory will be deleted"), so ``--ckpt_path last`` continued the run directory with every
row before the resume gone (and curves.png without those epochs).

Which rows are logged again: the CSV's ``step`` is Lightning's count of optimizer steps done
before the row was logged (``_batches_that_stepped``). A checkpoint at global step G holds G
optimizer steps; the resumed fit starts with step G's batch, and every row it logs has
``step >= G``. So the rows of the interrupted run with ``step >= G`` (logged after that
checkpoint and before the kill) are dropped, and the rows with ``step < G`` kept: those of a
mid-epoch checkpoint's own batch (logged just after it was written) and an epoch-end
checkpoint's epoch metrics too, which the resumed fit does not log again.
"""

from __future__ import annotations

import csv

import pytorch_lightning as pl
from lightning_fabric.loggers.logger import rank_zero_experiment
from pytorch_lightning.callbacks import Callback
from pytorch_lightning.loggers import CSVLogger
from pytorch_lightning.loggers.csv_logs import ExperimentWriter
from pytorch_lightning.utilities.rank_zero import rank_zero_info, rank_zero_only


class HistoryWriter(ExperimentWriter):
    """Lightning's CSV writer, except that an existing ``metrics.csv`` is kept and appended
    to (its columns are the starting set; a new column rewrites the file with the wider
    header, as Lightning does)."""

    def _check_log_dir_exists(self) -> None:  # Lightning's deletes metrics.csv here
        if self._fs.isfile(self.metrics_file_path):
            with self._fs.open(self.metrics_file_path, "r", newline="") as f:
                header = list(csv.DictReader(f).fieldnames or [])
            # Lightning appends rows in sorted column order (it sorts the keys at every save)
            self.metrics_keys = sorted(header)
            if header != self.metrics_keys:  # not a file Lightning wrote: its columns in that order
                self._rewrite_with_new_header(self.metrics_keys)

    def drop_rows_from(self, step: int) -> tuple[int, int]:
        """Remove the file's rows with ``step >= step``; returns (kept, dropped)."""
        self.save()  # rows of this run still in memory first (none before training starts)
        if not self._fs.isfile(self.metrics_file_path):
            return 0, 0
        with self._fs.open(self.metrics_file_path, "r", newline="") as f:
            reader = csv.DictReader(f)
            header, rows = reader.fieldnames or [], list(reader)
        # a row cut short by a kill during its write has no valid step: dropped (and counted)
        keep = [r for r in rows if (r.get("step") or "").isdigit() and int(r["step"]) < step]
        if len(keep) < len(rows):
            with self._fs.open(self.metrics_file_path, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=header)
                writer.writeheader()
                writer.writerows(keep)
        return len(keep), len(rows) - len(keep)


class HistoryCSVLogger(CSVLogger):
    """``CSVLogger`` writing through ``HistoryWriter``: a continued run directory keeps its
    metrics.csv."""

    @property
    @rank_zero_experiment
    def experiment(self) -> HistoryWriter:
        if self._experiment is None:  # as CSVLogger.experiment, with the other writer
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = HistoryWriter(log_dir=self.log_dir)
        return self._experiment

    @rank_zero_only
    def drop_rows_from(self, step: int) -> None:
        kept, dropped = self.experiment.drop_rows_from(step)
        if dropped:
            rank_zero_info(f"{self.experiment.metrics_file_path}: kept the {kept} rows before step {step}, "
                           f"dropped the {dropped} logged after the checkpoint (this fit logs those steps again)")


class TrimMetricsHistory(Callback):
    """At the start of training (after a checkpoint's state is restored), every
    ``HistoryCSVLogger`` drops the rows from ``trainer.global_step`` on: a resumed fit logs
    them again. A fit from scratch starts at step 0: an old file in its directory is
    replaced, as Lightning does."""

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        for logger in trainer.loggers:
            if isinstance(logger, HistoryCSVLogger):
                logger.drop_rows_from(trainer.global_step)
