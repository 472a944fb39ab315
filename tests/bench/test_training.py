"""bench/training.py: a job's step is measured in the precision its run would use."""

import pytest
import torch

from bench import training


@pytest.mark.parametrize("precision, autocast", [("bf16-mixed", True), ("32-true", False)])
def test_bench_job_steps_in_the_runs_precision(monkeypatch, precision, autocast):
    """The sizing of budgeted runs (bench/image_baselines.py) reads this step time, so it must be
    the step of the precision the run trains in, not always fp32's."""
    seen = []
    real = training.loss_of

    def spy(model, batch):
        seen.append(torch.is_autocast_enabled("cpu"))
        return real(model, batch)

    monkeypatch.setattr(training, "loss_of", spy)
    m = training.bench_job(training.ROOT / "configs/debug.yaml", steps=1, warmup=1,
                           args=["--trainer.precision", precision])
    assert m["precision"] == precision
    assert seen == [autocast, autocast]
