"""Two CPU processes (DDP, gloo) against one: the same validation metric within a tolerance,
torchmetrics synced across processes, and no sample counted twice in test metrics."""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

import vecset.pipelines.data.samplers as samplers
from vecset.pipelines.cli import run_cli
from vecset.pipelines.data.samplers import ResumableSampler, eval_sampler, even_eval_batch_size

ROOT = Path(__file__).resolve().parents[3]


def env() -> dict:
    e = dict(os.environ)
    e.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    e.pop("VECSET_RUN_VERSION", None)
    return e


def start(cwd: Path, *args: str) -> subprocess.Popen:
    # output to a file: an unread pipe would fill up and block the child
    log = open(cwd / "output.log", "w")
    return subprocess.Popen([sys.executable, "-m", "vecset", *args], cwd=cwd, env=env(), stdout=log,
                            stderr=subprocess.STDOUT)


def config(tmp: Path, batch_size: int) -> Path:
    cfg = yaml.safe_load((ROOT / "configs/debug.yaml").read_text())
    cfg["trainer"].update(max_epochs=2, enable_model_summary=False)
    cfg["trainer"].pop("callbacks", None)
    # n_test = 65: two shards of 33 and 32 sets; a padding sampler would repeat one set
    cfg["data"]["init_args"].update(n_train=256, n_val=64, n_test=65, batch_size=batch_size)
    path = tmp / "job.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def results(cwd: Path) -> dict:
    return json.loads((cwd / "runs/job/version_0/results.json").read_text())


def one_thread_cli(cwd: Path, args: list[str]):
    """``run_cli`` in this process, in ``cwd``, with the children's one torch thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with contextlib.chdir(cwd):
            return run_cli(args)
    finally:
        torch.set_num_threads(threads)


def test_ddp_two_processes_match_one(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    # the same 64 sets per optimizer step: one process with batches of 64, two with 32 each
    ddp = start(two, "fit", "--config", str(config(two, 32)), "--plots=false", "--trainer.strategy=ddp",
                "--trainer.devices=2", "--trainer.accelerator=cpu")
    # the one-process run here, while the two processes run (a process start less)
    one_thread_cli(one, ["fit", "--config", str(config(one, 64)), "--plots=false",
                         "--trainer.enable_progress_bar=false"])
    assert ddp.wait(timeout=300) == 0, (two / "output.log").read_text()[-4000:]
    out = (two / "output.log").read_text()
    assert "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2" in out
    # the training loss's epoch mean is synced (a MeanMetric): Lightning's advice to sync_dist
    # it is not printed; and one process (rank 0) reports the results
    assert "sync_dist" not in out, out[-4000:]
    assert out.count("results: ") == 1, out[-4000:]
    res1, res2 = results(one), results(two)
    assert res1["global_steps"] == res2["global_steps"] == 2 * 4
    # Tolerance 0.03 (val_acc over 64 sets, ~650 vectors): the per-step samples are the same,
    # but DDP averages the two processes' mean losses while one process averages over all
    # vectors of the batch (sets differ in length), so the gradients differ slightly.
    print("best val_acc, 1 process:", res1["best_val"], "2 processes:", res2["best_val"])
    assert abs(res1["best_val"] - res2["best_val"]) < 0.03, (res1["best_val"], res2["best_val"])

    # test metrics of the DDP run, recomputed in one process from the same checkpoint: equal
    # only if the two processes' metric states were summed (synced) and no set was counted twice
    # (here, in the test's process, with the children's one thread: a process start less)
    best = res2["checkpoint"]
    cli = one_thread_cli(two, ["test", "--config", str(two / "runs/job/version_0/config.yaml"), "--ckpt_path", best,
                               "--trainer.strategy=auto", "--trainer.devices=1", "--trainer.enable_progress_bar=false"])
    single = cli.trainer.callback_metrics["test_acc"].item()
    print("test_acc, 2 processes:", res2["test"]["test_acc"], "same checkpoint, 1 process:", single)
    assert math.isclose(single, res2["test"]["test_acc"], rel_tol=0, abs_tol=1e-6), (single, res2["test"])


@pytest.mark.parametrize("n,replicas,batch", [(65, 2, 32), (64, 2, 32), (7, 3, 2), (1000, 4, 64), (129, 2, 64)])
def test_eval_sampler_disjoint_complete_even(monkeypatch, n, replicas, batch):
    shards, batches = [], set()
    for rank in range(replicas):
        monkeypatch.setattr(samplers, "world", lambda r=rank: (replicas, r))
        sampler, b = eval_sampler(range(n), batch)
        idx = list(sampler)
        shards.append(idx)
        batches.add(math.ceil(len(idx) / b))
    flat = [i for s in shards for i in s]
    assert sorted(flat) == list(range(n))  # every sample once: none repeated, none dropped
    assert len(batches) == 1  # equal number of batches on every process (DDP must not hang)


def test_even_eval_batch_size():
    assert even_eval_batch_size([33, 32], 32) == 31
    assert even_eval_batch_size([32, 32], 32) == 32
    assert even_eval_batch_size([3, 2, 2], 2) == 3  # none <= 2 works: one batch of 3 / 2
    assert even_eval_batch_size([1, 0], 4) is None


def test_resumable_sampler_order_depends_on_seed_and_epoch_only(monkeypatch):
    data = range(20)
    a, b = ResumableSampler(data, seed=3), ResumableSampler(data, seed=3)
    a.set_epoch(2), b.set_epoch(2)
    assert list(a) == list(b) and sorted(a) == list(range(20))
    b.set_epoch(3)
    assert list(a) != list(b)
    order = list(a)
    a.resume_at(epoch=2, skip=5)
    assert list(a) == order[5:]  # once
    assert list(a) == order
    monkeypatch.setattr(samplers, "world", lambda: (2, 1))
    shard = ResumableSampler(data, seed=3)
    shard.set_epoch(2)
    assert list(shard) == order[1::2]  # rank 1's share of the same permutation
