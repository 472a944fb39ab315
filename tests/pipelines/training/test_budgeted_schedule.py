"""The schedule of a run with a time budget (``max_time``) anneals over the later of steps and
time (Li, Yumer and Ramanan 2020): progress follows the steps when time is ample, the clock when
it is short; the rate reaches the end of its decay when the time runs out and training stops
there; a run that time never limits takes the plain step schedule's rates. A fake clock: no test
reads the time."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback, Timer

from vecset.backbone import Backbone
from vecset.encoders import VectorEncoder
from vecset.heads import LabelingHead
from vecset.pipelines import TaskModule
from vecset.pipelines.data.synthetic import SyntheticSetDataModule
from vecset.pipelines.training.elapsed import TrainingClock
from vecset.pipelines.training.task import budget_step, warmup_cosine

LR, MAX_STEPS, WARMUP = 0.01, 40, 4  # warmup 0.1 of 40 steps


class FakeClock(Callback):
    """Seconds that advance by ``step_seconds`` at the start of every training step (what the
    step costs on a machine this slow), and every time it is read, nothing else."""

    def __init__(self, step_seconds: float) -> None:
        self.now, self.step_seconds, self.reads = 0.0, step_seconds, 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.now += self.step_seconds


class MaxTime(Timer):
    """``trainer.max_time``'s Timer, which stops nothing: the fake clock's TrainingClock alone stops
    the run (the real time of a test depends on the machine's load)."""

    def on_train_batch_end(self, *args, **kwargs) -> None:
        pass

    def on_train_epoch_end(self, *args, **kwargs) -> None:
        pass


class RecordLR(Callback):
    """The rate each training step runs at."""

    def __init__(self) -> None:
        self.lrs: list[float] = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.lrs.append(trainer.optimizers[0].param_groups[0]["lr"])


def fit(max_time: str | None, step_seconds: float, schedule: str | None = "budget") -> tuple[pl.Trainer, RecordLR, FakeClock]:
    """``schedule`` None: TaskModule's default."""
    torch.manual_seed(0)
    model = TaskModule(VectorEncoder(2, 8), Backbone(8, depth=1, heads=2), LabelingHead(8, 2), lr=LR, warmup=0.1,
                       **({} if schedule is None else {"schedule": schedule}))
    fake, record = FakeClock(step_seconds), RecordLR()
    timer = [MaxTime(duration=max_time)] if max_time else []
    trainer = pl.Trainer(max_steps=MAX_STEPS, max_epochs=-1, accelerator="cpu", devices=1,
                         callbacks=[fake, TrainingClock(clock=fake), record, *timer], logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                         num_sanity_val_steps=0, limit_val_batches=1)
    trainer.fit(model, SyntheticSetDataModule(n_train=64, n_val=8, n_test=8, batch_size=8))
    return trainer, record, fake


def test_warmup_cosine_at_a_fractional_step():
    assert warmup_cosine(3.5, 40, 4) == pytest.approx(1.0)  # inside warmup, capped at the peak
    assert warmup_cosine(22.0, 40, 4) == pytest.approx(0.5)
    assert budget_step(10, 40, 0.5) == 20.0 and budget_step(30, 40, 0.5) == 30.0


def test_ample_time_takes_the_step_schedule():
    # 1 s a step against an hour: time never limits, so the rates are the plain run's, step by step
    budgeted, record, fake = fit("00:01:00:00", step_seconds=1.0)
    plain, reference, _ = fit(None, step_seconds=1.0)
    assert budgeted.global_step == plain.global_step == MAX_STEPS
    assert record.lrs == reference.lrs
    assert record.lrs == pytest.approx([LR * warmup_cosine(s, MAX_STEPS, WARMUP) for s in range(MAX_STEPS)])
    assert fake.reads == MAX_STEPS + 1  # once at the start, then once per step


def test_short_time_follows_the_clock_and_stops_at_the_end_of_the_decay():
    # 1 s a step against 10 s: the schedule runs over time, a complete warmup and decay in 10 steps
    trainer, record, fake = fit("00:00:00:10", step_seconds=1.0)
    assert trainer.global_step == 10  # stopped when the budget ran out, not at max_steps
    # before step s, s seconds of 10 are used: progress s/10 of the 40-step schedule
    assert record.lrs == pytest.approx([LR * warmup_cosine(max(s, s / 10 * MAX_STEPS), MAX_STEPS, WARMUP)
                                        for s in range(10)])
    assert record.lrs[1] == pytest.approx(LR)  # the warmup ended within the first tenth of the time
    assert trainer.optimizers[0].param_groups[0]["lr"] == 0.0  # the decay's end, where the time ran out
    assert fake.reads == 11


@pytest.mark.parametrize("schedule", ["steps", None])
def test_schedule_steps_keeps_the_step_schedule_that_max_time_cuts(schedule):
    # the default too: "steps" scored higher than "budget" on validation (bench/logs/2026-12-06-budgeted-schedule.md)
    trainer, record, _ = fit("00:00:00:10", step_seconds=1.0, schedule=schedule)
    assert trainer.global_step == 10  # max_time still stops the run
    assert record.lrs == pytest.approx([LR * warmup_cosine(s, MAX_STEPS, WARMUP) for s in range(10)])
    assert trainer.optimizers[0].param_groups[0]["lr"] > 0.8 * LR  # cut in its first half


def test_time_and_steps_take_turns():
    # 0.2 s a step against 5 s: 25 steps of time; the steps lead first, the clock after step 10
    trainer, record, _ = fit("00:00:00:05", step_seconds=0.2)
    assert trainer.global_step == 25
    expected = [warmup_cosine(max(s, s * 0.2 / 5 * MAX_STEPS), MAX_STEPS, WARMUP) for s in range(25)]
    assert record.lrs == pytest.approx([LR * e for e in expected])
    assert record.lrs[5] == pytest.approx(LR * warmup_cosine(8, MAX_STEPS, WARMUP))  # 5 steps, 8 steps' time


def test_a_resumed_run_continues_from_the_time_it_used():
    fake = FakeClock(1.0)
    trainer = SimpleNamespace(callbacks=[Timer(duration="00:00:00:10")], strategy=SimpleNamespace(broadcast=lambda x: x),
                              should_stop=False, global_step=5, estimated_stepping_batches=MAX_STEPS)
    first, resumed = TrainingClock(clock=fake), TrainingClock(clock=fake)
    first.setup(trainer, None, "fit")
    first.on_train_start(trainer, None)
    fake.now = 6.0
    first.on_before_optimizer_step(trainer, None, None)
    assert first.used == pytest.approx(0.6) and first.state_dict() == {"seconds_used": pytest.approx(6.0)}
    resumed.load_state_dict(first.state_dict())  # from the checkpoint, before training starts
    resumed.setup(trainer, None, "fit")
    resumed.on_train_start(trainer, None)
    assert resumed.used == pytest.approx(0.6) and not trainer.should_stop
    fake.now = 10.0  # 4 more seconds: 10 of 10
    resumed.on_before_optimizer_step(trainer, None, None)
    assert resumed.used == pytest.approx(1.0) and trainer.should_stop
