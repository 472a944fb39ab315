"""Where each shipped job's training time goes on one device (issue #44, "Feed the GPU").

For each job: items/s through ``vecset fit`` (a short run, timed after warm-up steps), the
model's training step alone on one batch resident on the device (forward, backward, AdamW),
the train loader alone (batches/s, each moved to the device as Lightning does), host reads of
tensor values per training step (counted as tests/pipelines/training/test_host_reads.py does: on a
GPU each is a host-device sync, the step waits for the queue to drain), and peak memory (the GPU's peak
allocation during the job's fit; on the CPU the process's peak resident set so far, which only
grows over the jobs of one run: run a job alone for its own). Runs on CUDA when present, else
the CPU with 2 threads. Nothing is written into the checkout but the JSON (the fits' folders go
to a temporary directory).

    python bench/gpu_jobs.py                     # every job; bench/results/gpu_jobs.json (or cpu_jobs.json)
    python bench/gpu_jobs.py --jobs digits fashion_mnist_gpu --steps 50
    python bench/gpu_jobs.py --dry               # seconds: digits at tiny settings (tests/bench)
    python bench/gpu_jobs.py --jobs digits -- --data.init_args.batch_size=256   # CLI overrides after --

Reading the table: ``fit`` items/s far below ``model alone`` x batch size means the step waits
for something else (the loader, host reads, logging); ``loader`` batches/s under ``model alone``
steps/s means the loader caps training.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench.common import machine, table, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = tempfile.mkdtemp(prefix="gpu_jobs-")  # the fits' config.yaml, never the checkout


@dataclass
class Job:
    name: str
    config: str
    images: bool = False  # report images_per_s, else items_per_s
    args: list[str] = field(default_factory=list)


JOBS = [
    Job("fashion_mnist", "configs/fashion_mnist.yaml", True),
    Job("fashion_mnist_gpu", "configs/fashion_mnist_gpu.yaml", True),
    Job("fashion_mnist_cnn", "configs/fashion_mnist_cnn.yaml", True),
    Job("digits", "configs/digits.yaml", True),
    Job("digits_on_device", "configs/digits.yaml", True, ["--data.init_args.augment=false",
                                                          "--data.init_args.placement.on_device=true"]),
    Job("speech_frames", "configs/speech_frames.yaml"),
    Job("freesolv", "configs/freesolv.yaml"),
    Job("freesolv_on_device", "configs/freesolv.yaml", False, ["--data.init_args.placement.on_device=true"]),
    Job("freesolv_buckets", "configs/freesolv.yaml", False, ["--data.init_args.placement.on_device=true",
                                                             "--data.init_args.placement.length_buckets=pow2"]),
    Job("g2p", "configs/g2p.yaml"),
]
DRY = ["digits", "digits_on_device"]
# what is read on the host from a tensor's value: each a sync on a GPU
READS = {"__bool__", "item", "tolist", "__float__", "__int__", "__index__", "nonzero", "numpy", "unique",
         "masked_select"}


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def items_of(batch) -> int:
    """Samples in a batch (``ids``; a multi-task batch: the sum over tasks); shape metadata, no read."""
    if isinstance(batch, tuple):
        batch = batch[0]
    if isinstance(batch, dict) and "ids" in batch:
        return len(batch["ids"])
    if isinstance(batch, dict):
        return sum(items_of(b) for b in batch.values() if b is not None)
    return 0


class HostReads(torch.overrides.TorchFunctionMode):
    """Counts host reads of tensor values while ``on`` (reads inside torch.optim are left out:
    its step counters stay on the CPU on a GPU too)."""

    def __init__(self) -> None:
        super().__init__()
        self.on, self.count, self.sites = False, 0, collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if self.on:
            n = getattr(func, "__name__", "")
            hit = n in READS or (n == "__getitem__" and len(args) > 1 and isinstance(args[1], torch.Tensor)
                                 and args[1].dtype == torch.bool)
            if hit:
                stack = traceback.extract_stack(limit=8)
                if not any("torch/optim/" in f.filename for f in stack):
                    self.count += 1
                    # the innermost caller outside torch: vecset's code, or the library that read
                    f = next((f for f in reversed(stack[:-1]) if "/vecset/" in f.filename),
                             next((f for f in reversed(stack[:-1]) if "/torch/" not in f.filename), stack[-2]))
                    self.sites[f"{Path(f.filename).name}:{f.lineno}"] += 1
        return func(*args, **(kwargs or {}))


def build(job: Job, device: torch.device, extra: list[str]):
    """The job's CLI objects (model, data module, trainer) for ``device``, as ``vecset fit`` builds them."""
    from vecset.pipelines.cli import run_cli

    accel = "gpu" if device.type == "cuda" else "cpu"
    args = ["--config", str(ROOT / job.config), "--trainer.logger=false", f"--trainer.default_root_dir={SCRATCH}", "--trainer.enable_checkpointing=false",
            "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
            "--trainer.limit_val_batches=0", "--trainer.num_sanity_val_steps=0", "--trainer.max_epochs=-1",
            "--trainer.max_time=null", f"--trainer.accelerator={accel}", "--trainer.devices=1",
            *job.args, *extra]
    return run_cli(args, run=False)


def fit_rate(job: Job, device: torch.device, steps: int, warmup: int, extra: list[str]) -> tuple[dict, object]:
    """items/s of ``vecset fit`` over ``steps`` steps after ``warmup``; host reads per step over
    a few steps after those (counted in the same run, after the timing); peak memory."""
    import pytorch_lightning as pl

    reads = HostReads()
    count_steps = min(steps, 5)
    state = {"t0": None, "t1": None, "items": 0, "reads": 0, "counted": 0}

    class Clock(pl.Callback):
        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            s = trainer.global_step
            if s == warmup:
                sync(device)
                state["t0"] = time.perf_counter()
            if warmup <= s < warmup + steps:
                state["items"] += items_of(batch)
            if s == warmup + steps:
                sync(device)
                state["t1"] = time.perf_counter()
            if warmup + steps <= s < warmup + steps + count_steps and s % trainer.log_every_n_steps:
                # after the timed steps (the mode's Python hook on every torch call would slow them);
                # logging steps read on purpose: left out
                reads.__enter__()
                reads.on = True

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if reads.on:
                reads.on = False
                reads.__exit__(None, None, None)
                state["counted"] += 1

    cli = build(job, device, extra + [f"--trainer.max_steps={warmup + steps + count_steps}"])
    cli.trainer.callbacks.insert(0, Clock())
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    cli.trainer.fit(cli.model, cli.datamodule)
    sync(device)
    if state["t1"] is None:
        state["t1"] = time.perf_counter()
    rate = state["items"] / (state["t1"] - state["t0"])
    peak = (torch.cuda.max_memory_allocated(device) if device.type == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    per = reads.count / max(1, state["counted"])
    return {("images_per_s" if job.images else "items_per_s"): rate, "batch_size": state["items"] // max(1, steps),
            "syncs_per_step": per, "read_sites": dict(reads.sites.most_common(4)),
            "peak_mem_mb": peak / 2**20, "loader": type(cli.trainer.train_dataloader).__name__,
            "precision": str(cli.trainer.precision)}, cli


def parts(cli, device: torch.device, steps: int, warmup: int) -> dict:
    """The model's step alone on one resident batch, and the train loader alone, with the
    objects of the fit that ``fit_rate`` ran (its model on the device, its data set up)."""
    model, dm, trainer = cli.model, cli.datamodule, cli.trainer
    model.to(device).train()
    loader = dm.train_dataloader()

    def to_device(batch):
        return trainer.strategy.batch_to_device(batch, device)

    # loader alone: batches moved to the device as Lightning does, the epoch restarted when done
    it, n = iter(loader), 0
    for i in range(warmup + steps):
        if i == warmup:
            sync(device)
            t0 = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            it = iter(loader)
            batch = next(it)
        batch = to_device(batch)
        n += 1
    sync(device)
    loader_rate = steps / (time.perf_counter() - t0)

    # the model's step alone on one resident batch
    batch = to_device(next(iter(loader)))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    precision = trainer.precision_plugin

    def step():
        opt.zero_grad(set_to_none=True)
        with precision.forward_context():
            loss = model.head.loss(model(batch), batch)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    return {"model_alone_steps_per_s": steps / (time.perf_counter() - t0), "loader_batches_per_s": loader_rate}


def bench(job: Job, device: torch.device, steps: int, warmup: int, extra: list[str]) -> dict:
    row = {"job": job.name, "device": str(device) if device.type == "cpu" else torch.cuda.get_device_name(device)}
    measured, cli = fit_rate(job, device, steps, warmup, extra)
    row.update(measured)
    row.update(parts(cli, device, steps, warmup))
    return row


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", nargs="*", help=f"jobs to run (default all): {', '.join(j.name for j in JOBS)}")
    ap.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    ap.add_argument("--steps", type=int, default=30, help="timed steps (after --warmup)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--dry", action="store_true", help="digits with both loaders, a one-block model, 3 steps: "
                                                       "a seconds-long check of the script")
    ap.add_argument("--out", type=Path, help="the JSON file (default bench/results/gpu_jobs.json or cpu_jobs.json)")
    ap.add_argument("--notes", default="", help="a line saved with the rows")
    ap.add_argument("extra", nargs="*", help="CLI overrides for every job, after --, e.g. -- --data.init_args.batch_size=512")
    return ap


def main(argv: list[str] | None = None) -> Path:
    ap = parser()
    args = ap.parse_args(argv)
    cuda = torch.cuda.is_available() and args.device != "cpu"
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device here")
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    if not cuda:
        torch.set_num_threads(2)
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    names = DRY if args.dry else (args.jobs or [j.name for j in JOBS])
    unknown = set(names) - {j.name for j in JOBS}
    if unknown:
        ap.error(f"unknown jobs {sorted(unknown)}; known: {', '.join(j.name for j in JOBS)}")
    steps, warmup = (3, 1) if args.dry else (args.steps, args.warmup)
    tiny = ["--data.init_args.batch_size=16", "--model.init_args.backbone.init_args.depth=1",
            "--model.init_args.backbone.init_args.d_model=32"]
    extra = list(args.extra) + (tiny if args.dry else [])
    rows = []
    for job in [j for j in JOBS if j.name in names]:
        try:
            rows.append(bench(job, device, steps, warmup, extra))
        except Exception as e:  # one job's failure (its data missing) is reported, the others measured
            rows.append({"job": job.name, "device": str(device), "error": f"{type(e).__name__}: {e}"[:300]})
        print({k: v for k, v in rows[-1].items() if k != "read_sites"}, flush=True)
    cols = ["job", "device", "loader", "batch_size", "images_per_s", "items_per_s", "model_alone_steps_per_s",
            "loader_batches_per_s", "syncs_per_step", "peak_mem_mb", "error"]
    print(table(rows, cols))
    payload = {"device": str(device), "steps": steps, "warmup": warmup, "extra": extra, "notes": args.notes,
               "rows": rows}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"machine": machine(), "command": "python bench/gpu_jobs.py " +
                                        " ".join(argv if argv is not None else sys.argv[1:]), **payload}, indent=2))
        path = args.out
    else:
        path = write_json("gpu_jobs" if cuda else "cpu_jobs", payload)
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
