"""SIGTERM and Ctrl-C end ``vecset fit`` within seconds, also in the middle of a long step
(``pipelines/signals.py``). Each test starts the CLI in a subprocess on the tiny synthetic
config, waits until a training step has begun that would last ten minutes (or forever),
sends the signal and checks which path ended the run: the SIGTERM handler (its message, exit
143, no watchdog) or the watchdog (its message, exit 128 + signal). No test times the exit:
on a busy machine teardown alone can take seconds (issue #27)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from vecset.pipelines.signals import GRACE_ENV, grace_from_env

ROOT = Path(__file__).resolve().parents[2]
# the child: Python's own Ctrl-C handler even where the test runner was started with SIGINT
# ignored (a background job), as in a terminal; then the CLI (what the ``vecset`` command runs)
CHILD = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "import sys; from vecset.command import main; sys.argv[0] = 'vecset'; main()")


def start(tmp: Path, where: str, grace_s: float) -> subprocess.Popen:
    cfg = yaml.safe_load((ROOT / "configs/debug.yaml").read_text())
    cfg["trainer"].update(max_epochs=1, num_sanity_val_steps=0, enable_progress_bar=False,
                          enable_model_summary=False, logger=False)
    cfg["trainer"]["callbacks"] = [{"class_path": "signal_helpers.LongStep",
                                    "init_args": {"marker": str(tmp / "started"), "where": where}}]
    cfg["model"]["init_args"]["backbone"]["init_args"]["depth"] = 1
    cfg["data"]["init_args"].update(n_train=64, n_val=32, n_test=32, batch_size=32)
    (tmp / "job.yaml").write_text(yaml.safe_dump(cfg))
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'tests'}", OMP_NUM_THREADS="1",
               OMP_WAIT_POLICY="PASSIVE", VECSET_STOP_GRACE_S=str(grace_s))
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


def stop(proc: subprocess.Popen, signum: int, hang: float = 180) -> None:
    """Send ``signum`` and wait for the exit; ``hang`` only tells a run that never ends (the
    step lasts ten minutes, or forever) from one that does, on however busy a machine."""
    proc.send_signal(signum)
    try:
        proc.wait(timeout=hang)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"still running {hang:g} s after {signal.Signals(signum).name}")


def test_sigterm_ends_a_long_step_at_once(tmp_path):
    # a grace longer than the wait in stop(): only the handler can end the run in time
    proc = start(tmp_path, "python", grace_s=600)
    stop(proc, signal.SIGTERM)
    err = (tmp_path / "stderr.log").read_text()
    # the handler's SystemExit, through Lightning's shutdown; not the watchdog
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert "vecset: SIGTERM received; stopping the run (exit 143)" in err, err[-3000:]
    assert "without cleanup" not in err, err[-3000:]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_ends_a_step_stuck_in_c(tmp_path, signum):
    # the grace shortened from 5 s: the path is the same, the wait is not worth the suite's time
    proc = start(tmp_path, "c", grace_s=1)
    stop(proc, signum)
    err = (tmp_path / "stderr.log").read_text()
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, err[-3000:]
    assert f"vecset: {name} received; the running step did not return to Python within 1 s; exiting now " \
           f"without cleanup (exit {128 + signum})" in err, err[-3000:]
    assert "stopping the run" not in err  # the Python handler never ran: the main thread was in C


def test_the_grace_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(GRACE_ENV, raising=False)
    assert grace_from_env() == 5.0
    monkeypatch.setenv(GRACE_ENV, "0.5")
    assert grace_from_env() == 0.5
    for bad in ("soon", "0", "-1", "nan"):
        monkeypatch.setenv(GRACE_ENV, bad)
        with pytest.raises(ValueError, match=rf"VECSET_STOP_GRACE_S must be a number of seconds > 0 .*got '{bad}'"):
            grace_from_env()
