"""SIGTERM and Ctrl-C end ``vecset fit`` within seconds, also in the middle of a long step
(``pipelines/signals.py``). Each test starts the CLI in a subprocess on the tiny digits
config, waits until a training step has begun that would last ten minutes (or forever),
sends the signal and times the exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# the child: Python's own Ctrl-C handler even where the test runner was started with SIGINT
# ignored (a background job), as in a terminal; then the ``vecset`` entry point
CHILD = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "from vecset.pipelines.cli import main; main()")


def start(tmp: Path, where: str) -> subprocess.Popen:
    cfg = yaml.safe_load((ROOT / "configs/digits_pixel.yaml").read_text())
    cfg["trainer"].update(max_epochs=1, num_sanity_val_steps=0, enable_progress_bar=False,
                          enable_model_summary=False, logger=False)
    cfg["trainer"]["callbacks"] = [{"class_path": "signal_helpers.LongStep",
                                    "init_args": {"marker": str(tmp / "started"), "where": where}}]
    cfg["model"]["init_args"]["backbone"]["init_args"]["depth"] = 1
    (tmp / "job.yaml").write_text(yaml.safe_dump(cfg))
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'tests'}", OMP_NUM_THREADS="1",
               OMP_WAIT_POLICY="PASSIVE")
    with open(tmp / "stderr.log", "w") as log:  # a file: an unread pipe could fill up and block the child
        proc = subprocess.Popen([sys.executable, "-c", CHILD, "fit", "--config", str(tmp / "job.yaml"),
                                 "--plots=false"], cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 240
    while not (tmp / "started").exists():
        assert proc.poll() is None, (tmp / "stderr.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "the run never reached its long step"
        time.sleep(0.1)
    time.sleep(0.5)  # well inside the step
    return proc


def seconds_to_exit(proc: subprocess.Popen, signum: int, limit: float) -> float:
    t0 = time.monotonic()
    proc.send_signal(signum)
    try:
        proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"still running {limit:g} s after {signal.Signals(signum).name}")
    return time.monotonic() - t0


def test_sigterm_ends_a_long_step_at_once(tmp_path):
    proc = start(tmp_path, "python")
    took = seconds_to_exit(proc, signal.SIGTERM, limit=30)
    err = (tmp_path / "stderr.log").read_text()
    # the handler's SystemExit, through Lightning's shutdown; not the watchdog (5 s)
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert "vecset: SIGTERM received; stopping the run (exit 143)" in err, err[-3000:]
    assert took < 4.0 and "without cleanup" not in err, (took, err[-3000:])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_ends_a_step_stuck_in_c(tmp_path, signum):
    proc = start(tmp_path, "c")
    took = seconds_to_exit(proc, signum, limit=30)
    err = (tmp_path / "stderr.log").read_text()
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, err[-3000:]
    assert f"vecset: {name} received; the running step did not return to Python within 5 s" in err, err[-3000:]
    assert 4.5 < took < 9.0, took
