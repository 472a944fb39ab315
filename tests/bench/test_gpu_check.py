"""bench/gpu_check.py --dry: every command of the GPU session's script parses here (test_cuda.py
imports, gpu_jobs knows the jobs, LightningCLI accepts both Fashion-MNIST fits'
arguments), and the real run's timeouts fit in the 10 minutes one GPU command may take."""

import json

from bench import gpu_check


def test_dry_run_parses_every_command_and_the_timeouts_fit_ten_minutes(tmp_path):
    summary = json.loads(gpu_check.main(["--dry", "--out", str(tmp_path)]).read_text())
    steps = {s["step"]: s for s in summary["steps"]}
    assert list(steps) == ["env", "test_cuda", "gpu_jobs", "fmnist_attention", "fmnist_cnn"]
    for name, s in steps.items():
        assert s["rc"] == 0, (name, (tmp_path / f"{name}.txt").read_text()[-2000:])
    assert "max_time: 00:00:01:30" in (tmp_path / "fmnist_attention.txt").read_text()
    real = gpu_check.steps(tmp_path, 90, None)
    assert sum(t for _, _, t in real) <= 590
