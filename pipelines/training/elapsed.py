"""ElapsedTime: wall minutes since training started, logged at every validation, so that a
run's metrics.csv holds its validation metrics against time (runs compared at one time
budget: ``bench/image_baselines.py``'s accuracy-versus-minutes plot). TrainingClock: when
training started, so that ``results.json`` tells the data module's setup (featurization)
apart from training, and how much of the trainer's time budget (``max_time``) is used, which
the learning-rate schedule follows (Li, Yumer and Ramanan 2020, "Budgeted Training: Rethinking
Deep Neural Network Training Under Resource Constraints", ICLR, found a schedule annealed over
the budget better than a longer one cut off; on ``make run`` it was not:
bench/logs/2026-12-06-budgeted-schedule.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytorch_lightning as pl
from pytorch_lightning.callbacks import Callback, Timer
from pytorch_lightning.utilities import rank_zero_info


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
    """When training started, and the fraction of the time budget used.

    ``started``: ``time.time()`` at ``on_train_start``, after the data module's ``setup`` and the
    model's configuration, where ``trainer.max_time``'s timer starts too.
    ``used``: the fraction of ``max_time`` used so far (validation included, as the Timer counts
    it; a resumed run continues from its checkpoint's), read from ``clock`` once per optimizer step,
    before the update (``on_before_optimizer_step``), so that the rate the scheduler sets next
    follows it; 0 without ``max_time``. The learning-rate schedule anneals over
    the later of steps and time (``task.py``'s ``adamw_warmup_cosine``), so it ends within the
    budget; training stops when ``used`` reaches 1 (Lightning's Timer stops there on its own clock).
    Under several processes rank 0's reading is broadcast, so every process takes the same rates.

    Args:
        clock: monotonic seconds (tests give a fake one).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started: float | None = None
        self.budget_seconds: float | None = None
        self.used = 0.0
        self._seconds_before = 0.0  # used by the run this one resumes
        self._start: float | None = None

    @property
    def seconds_used(self) -> float:
        return self.used * self.budget_seconds if self.budget_seconds else 0.0

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        # before configure_optimizers: the schedule knows whether there is a budget
        timer = next((c for c in trainer.callbacks if isinstance(c, Timer)), None)
        remaining = timer.time_remaining() if timer is not None else None
        # remaining + elapsed: the duration (Timer keeps it private), whatever a resume restored
        self.budget_seconds = None if remaining is None else remaining + timer.time_elapsed()

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.started = time.time()
        self._start = self.clock()
        self.used = self._seconds_before / self.budget_seconds if self.budget_seconds else 0.0

    def on_before_optimizer_step(self, trainer: pl.Trainer, pl_module: pl.LightningModule, optimizer: Any) -> None:
        if not self.budget_seconds or self._start is None:
            return
        used = (self._seconds_before + self.clock() - self._start) / self.budget_seconds
        self.used = float(trainer.strategy.broadcast(used))
        if self.used >= 1.0 and not trainer.should_stop:
            trainer.should_stop = True
            # said once, beside Lightning's "Time limit reached": how much of the schedule's steps it took
            rank_zero_info(f"vecset: the time budget ({self.budget_seconds:.0f} s) is used at step "
                           f"{trainer.global_step + 1} of {trainer.estimated_stepping_batches}: the learning-rate "
                           "schedule has ended (it anneals over the time when time runs short)")

    def state_dict(self) -> dict[str, Any]:
        return {"seconds_used": self.seconds_used}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._seconds_before = float(state_dict.get("seconds_used", 0.0))
