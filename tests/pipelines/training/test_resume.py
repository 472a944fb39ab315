"""Crash and resume: SIGKILL ``vecset fit`` mid-epoch, resume with ``--ckpt_path last``, and get
the same weights and metrics as an uninterrupted run; checkpoint writes are atomic.

Tolerance: none (bitwise equality). Both runs execute the same kernels in the same order on
the same CPU with one thread and ``deterministic: true``; the data order is a function of
(seed, epoch) (ResumableSampler) and the RNG states (dropout is on here) are restored from
the checkpoint, so any difference is a resume bug, not float noise.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from vecset.pipelines.training.checkpoint import (
    AtomicCheckpointIO,
    run_version,
    wants_last_checkpoint,
)

ROOT = Path(__file__).resolve().parents[3]
STEPS_PER_EPOCH = 8  # n_train 256 / batch 32


def env() -> dict:
    e = dict(os.environ)
    e.update(PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'tests'}", OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    return e


def write_config(tmp: Path, name: str, pause_at: int | None = None) -> Path:
    """configs/debug.yaml, made tiny: 2 epochs of 8 steps, a step checkpoint every 3 steps,
    dropout on (so the RNG state matters), deterministic."""
    cfg = yaml.safe_load((ROOT / "configs/debug.yaml").read_text())
    cfg["trainer"].update(max_epochs=2, deterministic=True, log_every_n_steps=1, enable_model_summary=False)
    cfg["trainer"]["callbacks"] = [{"class_path": "vecset.pipelines.StepCheckpoint", "init_args": {"every_n_train_steps": 3}}]
    if pause_at is not None:
        cfg["trainer"]["callbacks"].append({"class_path": "resume_helpers.PauseAtStep",
                                            "init_args": {"step": pause_at, "marker": str(tmp / "paused")}})
    cfg["model"]["init_args"]["backbone"]["init_args"]["dropout"] = 0.1
    cfg["data"]["init_args"].update(n_train=256, n_val=64, n_test=64, batch_size=32)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def fit(cfg: Path, cwd: Path, *extra: str, wait: bool = True):
    cmd = [sys.executable, "-m", "vecset.pipelines.cli", "fit", "--config", str(cfg), "--plots=false", *extra]
    if not wait:
        # output to a file: an unread pipe would fill up and block the child
        return subprocess.Popen(cmd, cwd=cwd, env=env(), stdout=subprocess.DEVNULL, stderr=open(cwd / "stderr.log", "w"))
    r = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def weights(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)["state_dict"]


def test_sigkill_mid_epoch_then_resume_matches_uninterrupted(tmp_path):
    ref_dir, crash_dir = tmp_path / "ref", tmp_path / "crash"
    ref_dir.mkdir(), crash_dir.mkdir()
    # the uninterrupted reference runs alongside the run that will be killed
    ref = fit(write_config(ref_dir, "job"), ref_dir, wait=False)

    # pause at step 11 = epoch 1, batch 3: last-step.ckpt was written at step 9 (epoch 1, batch 1)
    cfg = write_config(crash_dir, "job", pause_at=11)
    proc = fit(cfg, crash_dir, wait=False)
    deadline = time.time() + 240
    while not (crash_dir / "paused").exists():
        assert proc.poll() is None, (crash_dir / "stderr.log").read_text()[-3000:]
        assert time.time() < deadline, "the run never reached the pause step"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    ckpts = crash_dir / "runs/job/version_0/checkpoints"
    step_ckpt = torch.load(ckpts / "last-step.ckpt", map_location="cpu", weights_only=True)
    assert step_ckpt["global_step"] == 9 and step_ckpt["epoch"] == 1  # mid-epoch
    assert step_ckpt["vecset_resume"]["batches_done"] == 1
    assert not (crash_dir / "runs/job/version_0/results.json").exists()

    assert ref.wait(timeout=240) == 0, (ref_dir / "stderr.log").read_text()[-3000:]

    # resume with the same config minus the pause: continues version_0 from last-step.ckpt
    r = fit(write_config(crash_dir, "job"), crash_dir, "--ckpt_path", "last")
    restored = re.findall(r"Restoring states from the checkpoint path at (\S+)", r.stdout + r.stderr)
    assert restored and restored[0].endswith("version_0/checkpoints/last-step.ckpt"), restored
    # Lightning's advice for resuming without a resumable loader or into a used checkpoint
    # folder does not apply here (ResumeState positions the ResumableSampler; continuing the
    # run directory is the point of --ckpt_path last): neither is printed
    out = r.stdout + r.stderr
    assert "not resumable" not in out and "Checkpoint directory" not in out, out[-3000:]
    assert not (crash_dir / "runs/job/version_1").exists()

    ref = json.loads((ref_dir / "runs/job/version_0/results.json").read_text())
    res = json.loads((crash_dir / "runs/job/version_0/results.json").read_text())
    assert res["global_steps"] == ref["global_steps"] == 2 * STEPS_PER_EPOCH
    assert res["test"] == ref["test"]  # bitwise: see the module docstring
    assert res["best_val"] == ref["best_val"]
    w_ref = weights(ref_dir / "runs/job/version_0/checkpoints/last.ckpt")
    w_res = weights(crash_dir / "runs/job/version_0/checkpoints/last.ckpt")
    assert w_ref.keys() == w_res.keys()
    for k in w_ref:
        assert torch.equal(w_ref[k], w_res[k]), k


def test_resume_version_selection(tmp_path):
    assert wants_last_checkpoint(["fit", "--ckpt_path", "last"])
    assert wants_last_checkpoint(["fit", "--ckpt_path=last"])
    assert not wants_last_checkpoint(["fit", "--ckpt_path", "runs/x/last.ckpt"])
    assert run_version(["fit", "--ckpt_path", "last"], tmp_path) == 0  # nothing to resume: a new run
    (tmp_path / "version_0").mkdir(), (tmp_path / "version_3").mkdir()
    assert run_version(["fit"], tmp_path) == 4
    assert run_version(["fit", "--ckpt_path", "last"], tmp_path) == 3


# One process imports the writer once (Lightning's import is most of a process start), then
# forks a child per delay that keeps overwriting the checkpoint, and SIGKILLs it ``delay``
# seconds after its first complete write; the test checks the file after each kill.
WRITER = """
import os, signal, sys, time, torch
from vecset.pipelines.training.checkpoint import AtomicCheckpointIO
io, path = AtomicCheckpointIO(), sys.argv[1]
for delay in map(float, sys.argv[2:]):
    first, done = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(first)
        for i in range(1000):
            # 8 MB per checkpoint, every value = i: a partial file cannot pass for a whole one
            io.save_checkpoint({"i": i, "w": torch.full((2_000_000,), float(i))}, path)
            if i == 0:
                os.write(done, b"0")
        os._exit(0)
    os.close(done)
    assert os.read(first, 1) == b"0"  # the first one was written
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    print("killed" if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL else f"exited {status}",
          flush=True)
    sys.stdin.readline()  # the test has read the file
"""


def test_sigkill_during_checkpoint_write_never_leaves_a_truncated_file(tmp_path):
    """Kill a process that keeps overwriting last.ckpt at several moments: what is left at the
    path always loads (weights_only=True) and is complete."""
    target = tmp_path / "last.ckpt"
    e = env()
    if os.path.isdir("/dev/shm") and os.stat("/dev/shm").st_dev != os.stat(tmp_path).st_dev:
        # the system temp dir on another filesystem: where Lightning's own writer (fsspec
        # transaction: mkstemp, then shutil.move = copy) left 4 truncated files in 12 kills
        e["TMPDIR"] = "/dev/shm"
    delays = (0.05, 0.3, 0.7)
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target), *map(str, delays)], env=e,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    for _ in delays:
        assert proc.stdout.readline().strip() == "killed"
        ckpt = torch.load(target, map_location="cpu", weights_only=True)
        assert ckpt["w"].shape == (2_000_000,)
        assert bool((ckpt["w"] == ckpt["i"]).all())
        proc.stdin.write("next\n")
        proc.stdin.flush()
    assert proc.wait(timeout=60) == 0
    assert {p.name for p in tmp_path.iterdir()} <= {"last.ckpt", ".last.ckpt.tmp"}  # at most one stale temp file


def test_atomic_save_keeps_the_old_file_when_the_write_fails(tmp_path):
    target = tmp_path / "last.ckpt"
    io = AtomicCheckpointIO()
    io.save_checkpoint({"v": torch.tensor([1.0])}, target)

    class Boom:
        def __reduce__(self):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        io.save_checkpoint({"v": torch.tensor([2.0]), "x": Boom()}, target)
    assert torch.load(target, weights_only=True)["v"].item() == 1.0
