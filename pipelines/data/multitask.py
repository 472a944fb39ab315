"""MultiTaskDataModule: several data modules, one per task, for a ``MultiTaskModule`` (one
shared backbone, an encoder and a head per task: ``pipelines/training/multitask.py``)."""

from __future__ import annotations

import logging

import pytorch_lightning as pl
from pytorch_lightning.utilities import CombinedLoader

from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.data.overlap import overlap_with_test

log = logging.getLogger(__name__)


class MultiTaskDataModule(VecsetDataModule):
    """Several DataModules, one per task name. Training draws a batch from every task at
    each step (``max_size_cycle``: shorter tasks cycle); validation and test run the tasks
    one after another (``sequential``); predict runs one task, ``predict_task``.

    Args:
        tasks: task name -> its data module.
        predict_task: the task ``vecset predict`` runs (its data module's predict inputs, the
            model's encoder and head of that name); may be left out when there is one task.
    """

    def __init__(self, tasks: dict[str, pl.LightningDataModule], predict_task: str | None = None) -> None:
        super().__init__()
        if not tasks:
            raise ValueError("MultiTaskDataModule needs at least one task")
        if predict_task is not None and predict_task not in tasks:
            raise ValueError(f"predict_task {predict_task!r} is not one of the tasks {list(tasks)}")
        self.tasks = tasks
        self.predict_task = predict_task
        self.test_overlap: dict[str, dict[str, int]] | None = None  # overlap_with_test's counts, at fit

    @property
    def names(self) -> list[str]:
        return list(self.tasks)

    def prepare_data(self) -> None:
        for dm in self.tasks.values():
            dm.prepare_data()

    def predict_task_name(self) -> str:
        """The task being predicted: ``predict_task``, or the only task."""
        if self.predict_task is not None:
            return self.predict_task
        if len(self.tasks) != 1:
            raise ValueError(f"vecset predict with a multi-task model runs one task: name it with "
                             f"--data.init_args.predict_task (one of {self.names})")
        return self.names[0]

    def setup(self, stage: str | None = None) -> None:
        if stage == "predict":  # only the task being predicted reads its inputs
            self.tasks[self.predict_task_name()].setup(stage)
            return
        for name, dm in self.tasks.items():
            if isinstance(dm, VecsetDataModule):  # its files (skipped rows, ...) go to <log_dir>/<task>/
                dm.trainer, dm.task_name = self.trainer, name
            dm.setup(stage)
        if stage in ("fit", None) and self.test_overlap is None:
            self.test_overlap = overlap_with_test(self.tasks)
            seen = {t: {k: v for k, v in row.items() if k not in ("test", "own train") and v}
                    for t, row in self.test_overlap.items()}
            if any(seen.values()):  # structure with another task's label: allowed, and said
                log.warning("test items in another task's training split (with that task's label; their own "
                            "targets are not trained on): %s", "; ".join(
                                f"{t} test ({self.test_overlap[t]['test']}): " + ", ".join(f"{v} in {k}" for k, v in c.items())
                                for t, c in seen.items() if c))

    def train_dataloader(self):
        return CombinedLoader({k: dm.train_dataloader() for k, dm in self.tasks.items()}, "max_size_cycle")

    def val_dataloader(self):
        return CombinedLoader([dm.val_dataloader() for dm in self.tasks.values()], "sequential")

    def test_dataloader(self):
        return CombinedLoader([dm.test_dataloader() for dm in self.tasks.values()], "sequential")

    def predict_dataloader(self):
        return self.tasks[self.predict_task_name()].predict_dataloader()

    def describe(self, sample_id: int, task: str | None = None) -> str:
        """The task's data module's ``describe`` (sample ids are per task; the task may be
        left out where there is only one); the id itself for a plain LightningDataModule."""
        if task is None:
            if len(self.tasks) != 1:
                raise ValueError(f"MultiTaskDataModule.describe({sample_id}) needs the task, one of {self.names}")
            (task,) = self.tasks
        data = self.tasks[task]
        return data.describe(sample_id) if isinstance(data, VecsetDataModule) else str(sample_id)
