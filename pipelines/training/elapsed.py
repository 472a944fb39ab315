"""ElapsedTime: wall minutes since training started, logged at every validation, so that a
run's metrics.csv holds its validation metrics against time (runs compared at one time
budget: ``bench/image_baselines.py``'s accuracy-versus-minutes plot). TrainingClock: when
training started, so that ``results.json`` tells the data module's setup (featurization)
apart from training."""

from __future__ import annotations

import time

import pytorch_lightning as pl
from pytorch_lightning.callbacks import Callback


class ElapsedTime(Callback):
    """Logs ``elapsed_min``: minutes since this process started training (validation
    included, as ``trainer.max_time`` counts them), once per validation run (epoch level).
    The sanity check before training logs nothing; a resumed run counts from its restart."""

    def __init__(self) -> None:
        self.start: float | None = None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.start = time.monotonic()

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking or self.start is None:
            return
        pl_module.log("elapsed_min", (time.monotonic() - self.start) / 60.0, on_step=False, on_epoch=True)


class TrainingClock(Callback):
    """``started``: ``time.time()`` at ``on_train_start``, after the data module's ``setup``
    and the model's configuration, where ``trainer.max_time``'s timer starts too."""

    def __init__(self) -> None:
        self.started: float | None = None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.started = time.time()
