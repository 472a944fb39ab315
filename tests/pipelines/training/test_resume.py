"""Crash and resume: SIGKILL ``vecset fit`` mid-epoch, resume with ``--ckpt_path last``, and get
the same weights and metrics as an uninterrupted run; checkpoint writes are atomic.

Tolerance: none (bitwise equality). Both runs execute the same kernels in the same order on
the same CPU with one thread and ``deterministic: true``; the data order is a function of
(seed, epoch) (ResumableSampler) and the RNG states (dropout is on here) are restored from
the checkpoint, so any difference is a resume bug, not float noise.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch
import yaml

import vecset.pipelines.training.run_folders as run_folders
from vecset.pipelines.training.checkpoint import AtomicCheckpointIO
from vecset.pipelines.training.metrics_history import HistoryWriter
from vecset.pipelines.training.run_folders import (
    claim_version,
    resumed_version,
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
    cmd = [sys.executable, "-m", "vecset", "fit", "--config", str(cfg), "--plots=false", *extra]
    if not wait:
        # output to a file: an unread pipe would fill up and block the child
        return subprocess.Popen(cmd, cwd=cwd, env=env(), stdout=subprocess.DEVNULL, stderr=open(cwd / "stderr.log", "w"))
    r = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def fit_here(cfg: Path, cwd: Path) -> None:
    """``fit`` with ``run_cli`` in this process and one torch thread, as ``fit`` runs it in a
    subprocess: the same kernels, so the same bits. ``deterministic: true`` is a process-wide
    torch flag: put back as it was."""
    from vecset.pipelines.cli import run_cli

    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    cublas = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    torch.set_num_threads(1)
    try:
        with contextlib.chdir(cwd):
            run_cli(["fit", "--config", str(cfg), "--plots=false", "--trainer.enable_progress_bar=false"])
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
        if cublas is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)


def weights(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)["state_dict"]


def metric_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_sigkill_mid_epoch_then_resume_matches_uninterrupted(tmp_path):
    ref_dir, crash_dir = tmp_path / "ref", tmp_path / "crash"
    ref_dir.mkdir(), crash_dir.mkdir()
    # pause at step 11 = epoch 1, batch 3: last-step.ckpt was written at step 9 (epoch 1, batch 1)
    cfg = write_config(crash_dir, "job", pause_at=11)
    proc = fit(cfg, crash_dir, wait=False)
    # the uninterrupted reference runs in this process (a process start less), with the
    # subprocesses' one thread, while the run that will be killed starts
    fit_here(write_config(ref_dir, "job"), ref_dir)
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
    # metrics.csv keeps the rows logged before the kill: Lightning's CSV logger deleted them
    # ("Previous log files in this directory will be deleted"); the rows logged after the
    # checkpoint (steps 9 and 10, run again) are dropped, and the counts said: kept are the
    # steps 0-8 (9 rows) and epoch 0's validation and epoch means (2 rows)
    assert "will be deleted" not in out, out[-3000:]
    assert "kept the 11 rows before step 9, dropped the 2 logged after the checkpoint" in out, out[-3000:]

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

    # the resumed run's metrics.csv is the uninterrupted one's, row for row and bitwise, except
    # the epoch means of the epoch the kill cut (epoch 1's train_loss_epoch and train_acc):
    # Lightning and torchmetrics keep no running means in a checkpoint, so they average the
    # batches after the resume only
    rows_ref = metric_rows(ref_dir / "runs/job/version_0/metrics.csv")
    rows_res = metric_rows(crash_dir / "runs/job/version_0/metrics.csv")
    cut = [i for i, row in enumerate(rows_ref) if row["epoch"] == "1" and row["train_loss_epoch"]]
    # 16 training steps, 2 validations, 2 epoch means, 1 test
    assert len(cut) == 1 and len(rows_res) == len(rows_ref) == 21
    assert [r for i, r in enumerate(rows_res) if i not in cut] == [r for i, r in enumerate(rows_ref) if i not in cut]
    assert [r["step"] for r in rows_res if r["train_loss_step"]] == [str(s) for s in range(2 * STEPS_PER_EPOCH)]


def test_resume_version_selection(tmp_path):
    assert wants_last_checkpoint(["fit", "--ckpt_path", "last"])
    assert wants_last_checkpoint(["fit", "--ckpt_path=last"])
    assert not wants_last_checkpoint(["fit", "--ckpt_path", "runs/x/last.ckpt"])
    assert resumed_version(["fit", "--ckpt_path", "last"], tmp_path) is None  # nothing to resume: a new run
    (tmp_path / "version_0").mkdir(), (tmp_path / "version_3").mkdir()
    # runs stopped before their first checkpoint: none is continued (a new run starts)
    assert resumed_version(["fit", "--ckpt_path", "last"], tmp_path) is None
    (tmp_path / "version_3/checkpoints").mkdir()
    (tmp_path / "version_3/checkpoints/last.ckpt").write_bytes(b"")
    assert resumed_version(["fit"], tmp_path) is None
    assert resumed_version(["fit", "--ckpt_path", "last"], tmp_path) == 3
    assert claim_version(tmp_path) == 4 and (tmp_path / "version_4").is_dir()


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(capsys, *args: str) -> str:
    """``vecset fit`` with ``args`` in this process: it must exit 2; its stderr."""
    from vecset.pipelines.cli import run_cli

    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        run_cli(["fit", *args, "--plots=false", "--trainer.enable_progress_bar=false"])
    assert e.value.code == 2
    return capsys.readouterr().err


def test_last_refuses_another_runs_data_and_a_finished_run(tmp_path, monkeypatch, capsys):
    """Issue 57: a run A fitted to the end on data A; the same config on data B (another seed of
    the synthetic sets) stopped before its first checkpoint; B again with --ckpt_path last took
    A's folder (the newest with a checkpoint), rewrote its config.yaml, trimmed its metrics.csv
    and replaced its results.json. Now it is refused naming the differing setting and the
    passed-over folder, and so is a resume of the finished run with its own settings or with
    another model; A's files are untouched and no folder is made."""
    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    cfg = str(write_config(tmp_path, "job"))
    run_cli(["fit", "--config", cfg, "--plots=false", "--trainer.enable_progress_bar=false", "--trainer.max_epochs=1"])
    a = tmp_path / "runs/job/version_0"
    before = snapshot(a)
    assert "results.json" in before and "checkpoints/last.ckpt" in before
    with pytest.raises(SystemExit) as stop:  # B, stopped (as by SIGTERM) at step 1: before its first checkpoint
        run_cli(["fit", "--config", cfg, "--data.init_args.seed=1", "--plots=false", "--trainer.enable_progress_bar=false",
                 "--trainer.callbacks+=resume_helpers.StopAtStep", "--trainer.callbacks.step=1"])
    assert stop.value.code == 143
    assert not list((tmp_path / "runs/job/version_1").rglob("*.ckpt"))

    err = refused(capsys, "--config", cfg, "--data.init_args.seed=1", "--ckpt_path", "last")
    assert err.startswith("error: --ckpt_path last: runs/job/version_0 is another run, with other data or model "
                          "settings than this command's: data.init_args.seed: the run has 0, the config has 1 "
                          "(runs/job/version_1, newer, holds no checkpoint"), err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1
    err = refused(capsys, "--config", cfg, "--model.init_args.backbone.init_args.depth=3", "--ckpt_path", "last")
    assert "model.init_args.backbone.init_args.depth: the run has 2, the config has 3" in err.splitlines()[0], err
    # its own settings (another learning rate may differ): finished, nothing to resume
    err = refused(capsys, "--config", cfg, "--model.init_args.lr=0.01", "--ckpt_path", "last")
    assert err.startswith("error: --ckpt_path last: runs/job/version_0 finished (its results.json is there)"), err
    assert "--ckpt_path runs/job/version_0/checkpoints/last.ckpt" in err.splitlines()[0]

    # its checkpoint named with data B: the same refusal
    last = str(a / "checkpoints/last.ckpt")
    err = refused(capsys, "--config", cfg, "--data.init_args.seed=1", "--ckpt_path", last)
    assert err.startswith(f"error: --ckpt_path {last}: runs/job/version_0 is another run"), err
    assert "data.init_args.seed: the run has 0, the config has 1" in err.splitlines()[0]

    assert snapshot(a) == before
    assert sorted(p.name for p in (tmp_path / "runs/job").iterdir()) == ["version_0", "version_1"]

    # a test of "last" on data B rewrote A's config.yaml with B's settings: now it tests A's last
    # checkpoint from a folder of its own and A's files stay as they are
    run_cli(["test", "--config", cfg, "--data.init_args.seed=1", "--ckpt_path", "last", "--plots=false",
             "--trainer.enable_progress_bar=false"])
    assert snapshot(a) == before
    tested = yaml.safe_load((tmp_path / "runs/job/version_2/config.yaml").read_text())
    assert tested["ckpt_path"] == "runs/job/version_0/checkpoints/last.ckpt"
    assert tested["data"]["init_args"]["seed"] == 1


def test_two_runs_never_claim_one_version(tmp_path, monkeypatch):
    """Two fits started together listed the same versions and both wrote into the next one.
    A claim creates its directory exclusively: the second run, having listed before the first
    created version_0, takes version_1."""
    assert claim_version(tmp_path) == 0
    monkeypatch.setattr(run_folders, "taken_versions", lambda root: [])  # listed before version_0 existed
    assert claim_version(tmp_path) == 1
    assert claim_version(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["version_0", "version_1", "version_2"]


def test_a_fit_started_with_another_writes_into_its_own_version(tmp_path, monkeypatch):
    """The CLI's run directory is claimed: a fit that listed runs/job/ before another run
    created version_0 there (simulated: the listing is stale, version_0 exists) writes into
    version_1 and leaves version_0 alone."""
    from vecset.pipelines.cli import run_cli

    cfg = write_config(tmp_path, "job")
    other = tmp_path / "runs/job/version_0"
    other.mkdir(parents=True)
    (other / "metrics.csv").write_text("epoch,step,val_acc\n0,3,0.5\n")  # the other run's
    monkeypatch.setattr(run_folders, "taken_versions", lambda root: [])
    monkeypatch.chdir(tmp_path)
    cli = run_cli(["fit", "--config", str(cfg), "--plots=false", "--trainer.max_epochs=1",
                   "--trainer.enable_progress_bar=false"])
    assert Path(cli.trainer.log_dir) == Path("runs/job/version_1")
    assert (tmp_path / "runs/job/version_1/results.json").exists()
    assert sorted(p.name for p in other.iterdir()) == ["metrics.csv"]
    assert (other / "metrics.csv").read_text() == "epoch,step,val_acc\n0,3,0.5\n"


def test_concurrent_claims_are_distinct(tmp_path):
    """Eight threads claiming at once, three times each: 24 distinct versions."""
    import threading

    start, got = threading.Barrier(8), []

    def claim():
        start.wait()
        got.extend(claim_version(tmp_path) for _ in range(3))

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(24))


def test_history_writer_keeps_and_trims_the_file(tmp_path):
    """Lightning's writer deletes an existing metrics.csv; HistoryWriter appends to it in its
    columns (sorted, as Lightning writes them), widens the header for a new column, and drops
    rows from a step on."""
    (tmp_path / "metrics.csv").write_text("step,val_acc,epoch\n3,0.5,0\n7,0.75,0\n11,0.8,1\n")
    w = HistoryWriter(str(tmp_path))
    assert w.drop_rows_from(8) == (2, 1)
    w.log_metrics({"val_acc": 0.9, "epoch": 1}, step=8)
    w.save()
    assert (tmp_path / "metrics.csv").read_text().splitlines() == ["epoch,step,val_acc", "0,3,0.5", "0,7,0.75",
                                                                   "1,8,0.9"]
    w.log_metrics({"lr": 0.1, "epoch": 1}, step=9)
    w.save()
    rows = metric_rows(tmp_path / "metrics.csv")
    assert [(r["step"], r["val_acc"], r["lr"]) for r in rows] == [("3", "0.5", ""), ("7", "0.75", ""),
                                                                   ("8", "0.9", ""), ("9", "", "0.1")]


def keep_writing(path: Path, tmpdir: str | None, first: int) -> None:
    """In a forked child: overwrite ``path`` again and again, 8 MB per checkpoint, every value =
    i (a partial file cannot pass for a whole one); a byte on ``first`` after the first write."""
    code = 1
    try:
        torch.set_num_threads(1)  # as DataLoader workers do after a fork: no OpenMP pool of the parent
        if tmpdir is not None:
            os.environ["TMPDIR"], tempfile.tempdir = tmpdir, None
        io = AtomicCheckpointIO()
        for i in range(1000):
            io.save_checkpoint({"i": i, "w": torch.full((2_000_000,), float(i))}, path)
            if i == 0:
                os.write(first, b"0")
        code = 0
    finally:
        os._exit(code)  # never back into the test runner


def test_sigkill_during_checkpoint_write_never_leaves_a_truncated_file(tmp_path):
    """Kill a process that keeps overwriting last.ckpt at several moments: what is left at the
    path always loads (weights_only=True) and is complete. The writers are forks of the test's
    process (Lightning's import, most of a process start, is done once)."""
    target = tmp_path / "last.ckpt"
    tmpdir = None
    if os.path.isdir("/dev/shm") and os.stat("/dev/shm").st_dev != os.stat(tmp_path).st_dev:
        # the system temp dir on another filesystem: where Lightning's own writer (fsspec
        # transaction: mkstemp, then shutil.move = copy) left 4 truncated files in 12 kills
        tmpdir = "/dev/shm"
    for delay in (0.05, 0.3, 0.7):
        first, done = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(first)
            keep_writing(target, tmpdir, done)
        os.close(done)
        try:
            assert os.read(first, 1) == b"0", "the writer ended before its first checkpoint"
        finally:
            os.close(first)
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"exited {status}"
        ckpt = torch.load(target, map_location="cpu", weights_only=True)
        assert ckpt["w"].shape == (2_000_000,)
        assert bool((ckpt["w"] == ckpt["i"]).all())
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
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]  # the partial temp file is gone


def test_disk_full_names_the_checkpoint_and_leaves_no_temp_file(tmp_path, monkeypatch):
    import errno

    target = tmp_path / "last.ckpt"
    io = AtomicCheckpointIO()
    io.save_checkpoint({"v": torch.tensor([1.0])}, target)
    real_save = torch.save

    def save_until_full(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 part of a checkpoint")  # a partial file, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(torch, "save", save_until_full)
    with pytest.raises(OSError) as e:
        io.save_checkpoint({"v": torch.tensor([2.0])}, target)
    monkeypatch.setattr(torch, "save", real_save)
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(target)
    assert str(e.value) == (f"[Errno 28] No space left on device while writing the checkpoint (the previous "
                            f"last.ckpt, if any, is unchanged): '{target}'")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]  # no .last.ckpt.tmp
    assert torch.load(target, weights_only=True)["v"].item() == 1.0
