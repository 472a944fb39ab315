"""Training speed of this checkout against another one (an earlier commit), job by job, on this CPU.

Each job trains a few steps through the ``vecset`` CLI in a fresh process per checkout, the two
checkouts taking turns (A B A B ...), and the training steps after a warm-up are timed from inside
(a callback: start-up, data setup and test are left out). The number is the ratio of items per
second, this checkout / the other, per pair of runs, so that the machine's drift between pairs
cancels; the median pair is reported. Each run uses the job's shipped config as a user runs it
(precision ``auto``), or with the arguments given after ``--``.

    git worktree add /tmp/base <commit>
    python bench/checkout_ratio.py --base /tmp/base --jobs fashion_mnist speech_frames freesolv
    python bench/checkout_ratio.py --base /tmp/base --jobs freesolv --tag fp32 -- --trainer.precision 32-true
    python bench/checkout_ratio.py --base . --jobs freesolv --tag on_device --this-args="--data.init_args.placement.on_device=true"

``--this-args``: arguments for this checkout's runs only (``--base .``: an option against its default).

Prints a table and writes ``bench/results/checkout_ratio[_<tag>].json`` (rows: ``job``,
``items_per_s_this``, ``items_per_s_base``, ``ratio`` per pair and its median, the commits).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# job -> (config, training steps timed after WARMUP)
JOBS = {
    "fashion_mnist": ("configs/fashion_mnist.yaml", 40),
    "speech_frames": ("configs/speech_frames.yaml", 20),
    "freesolv": ("configs/freesolv.yaml", 40),
    "digits": ("configs/digits.yaml", 40),
    "debug": ("configs/debug.yaml", 20),
}
WARMUP = 5

# runs inside the checkout's own interpreter path: the CLI built without running, a callback
# that times the steps after the warm-up, then the fit
TIMED_FIT = r"""
import json, sys, time
import pytorch_lightning as pl
from vecset.pipelines.cli import run_cli
warmup, steps, args = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
class Clock(pl.Callback):
    t0 = t1 = None; items = 0
    def on_train_batch_start(self, trainer, m, batch, i):
        if trainer.global_step == warmup:
            self.t0 = time.perf_counter()
    def on_train_batch_end(self, trainer, m, out, batch, i):
        if self.t0 is not None:
            self.items += len(batch["ids"])
            self.t1 = time.perf_counter()
cli = run_cli([*args, "--trainer.max_steps", str(warmup + steps), "--trainer.max_epochs", "-1",
               "--trainer.limit_val_batches", "0", "--trainer.num_sanity_val_steps", "0",
               "--trainer.enable_progress_bar", "false", "--plots", "false"], run=False)
clock = Clock()
cli.trainer.callbacks.append(clock)
cli.trainer.fit(cli.model, cli.datamodule)
print("TIMED " + json.dumps({"items_per_s": clock.items / (clock.t1 - clock.t0), "steps": steps}))
"""


def timed_run(checkout: Path, config: str, steps: int, extra: list[str]) -> float:
    """Items per second of one training run of ``config`` in ``checkout`` (its own code first on
    the path), in a scratch directory whose data paths point into the checkout."""
    with tempfile.TemporaryDirectory() as scratch:
        for name in ("data", "configs"):  # the configs' relative paths resolve in the checkout
            os.symlink(checkout / name, Path(scratch) / name)
        env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "2"}
        out = subprocess.run([sys.executable, "-c", TIMED_FIT, str(WARMUP), str(steps), "--config",
                              str(checkout / config), *extra], cwd=scratch, env=env, capture_output=True,
                             text=True)
    for line in out.stdout.splitlines():
        if line.startswith("TIMED "):
            return json.loads(line[6:])["items_per_s"]
    raise RuntimeError(f"{checkout}: {config} gave no timing (exit {out.returncode}):\n{out.stderr[-3000:]}")


def commit_of(checkout: Path) -> str:
    return subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="the other checkout (e.g. a git worktree of an earlier commit)")
    ap.add_argument("--jobs", nargs="+", choices=sorted(JOBS), default=["fashion_mnist", "speech_frames", "freesolv"])
    ap.add_argument("--pairs", type=int, default=2, help="A/B pairs per job")
    ap.add_argument("--steps", type=int, default=None, help="timed steps (default: the job's)")
    ap.add_argument("--tag", default="")
    ap.add_argument("--this-args", default="", help="arguments for this checkout's runs only (one string)")
    args = ap.parse_args(argv)
    rows = []
    print(f"{'job':<16}{'this items/s':>14}{'base items/s':>14}{'ratio (median)':>16}  ratios")
    for job in args.jobs:
        config, steps = JOBS[job]
        steps = args.steps or steps
        this, base = [], []
        for _ in range(args.pairs):
            this.append(timed_run(ROOT, config, steps, extra + shlex.split(args.this_args)))
            base.append(timed_run(args.base.resolve(), config, steps, extra))
        ratios = [a / b for a, b in zip(this, base, strict=True)]
        row = {"job": job, "config": config, "timed_steps": steps, "items_per_s_this": this,
               "items_per_s_base": base, "ratios": ratios, "ratio_median": statistics.median(ratios)}
        rows.append(row)
        print(f"{job:<16}{statistics.median(this):>14.1f}{statistics.median(base):>14.1f}"
              f"{row['ratio_median']:>16.3f}  {', '.join(f'{r:.3f}' for r in ratios)}")
    out = ROOT / "bench" / "results" / f"checkout_ratio{'_' + args.tag if args.tag else ''}.json"
    out.write_text(json.dumps({
        "command": "python bench/checkout_ratio.py " + " ".join(sys.argv[1:]),
        "this_commit": commit_of(ROOT), "base_commit": commit_of(args.base), "extra_args": extra,
        "this_args": args.this_args,
        "threads": 2, "load_before": os.getloadavg(), "rows": rows}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
