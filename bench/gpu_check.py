"""The GPU measurements of issue #44 as one command, for a session that has a GPU for minutes.

Runs, each under its own timeout (together under 10 minutes), everything written under one
folder (``--out``, default ``$OUT``):

1. ``env.txt``: nvidia-smi, Python, torch/CUDA, Lightning versions (and what is missing).
2. ``test_cuda.txt`` / ``test_cuda.xml``: ``pytest tests/pipelines/test_cuda.py`` (attention
   paths against float64, bf16, the CLI on the GPU, data on the GPU without a sync, fused AdamW).
3. ``gpu_jobs.json`` / ``gpu_jobs.txt``: ``bench/gpu_jobs.py --device cuda``: per shipped job,
   items/s through ``vecset fit``, the model's step alone, the loader alone, host syncs per
   step, peak memory (a job whose data or package is missing is a row with its error); FreeSolv
   with the classic loader, with its graphs on the GPU (``freesolv_on_device``) and with pow2
   length buckets there too (``freesolv_buckets``).
4. ``fmnist_attention/``, ``fmnist_cnn/`` (+ ``.txt``): Fashion-MNIST self-attention
   (``configs/fashion_mnist_gpu.yaml``, data on the GPU) and the CNN (``fashion_mnist_cnn.yaml``,
   the CPU loader with 5 workers) for the same wall time (``--fit-time``, default 90 s) with
   the same precision (bf16-mixed), at most 30 epochs, each tested after its fit: epochs
   reached and test accuracy in their ``results.json``.

``summary.json`` lists each step's command, exit status, seconds and whether it timed out.

    python bench/gpu_check.py                   # on the GPU machine; OUT=... or --out DIR
    python bench/gpu_check.py --dry --out /tmp/gc   # here, seconds: every command parses

``--dry`` runs nothing, in this process: test_cuda.py is imported, gpu_jobs' arguments are parsed
(``gpu_jobs.parser``), the two fits print their config (LightningCLI parses and type-checks every
argument) instead of fitting.

On a GPU machine without a package registry (../shared/GPU.md), put the missing wheels in a
folder with ``pip install --no-index --no-deps --target DIR`` and pass ``--deps DIR`` (it goes
on PYTHONPATH after the checkout); ``--fmnist-root`` names the folder of the four
Fashion-MNIST .gz files (default: the data module's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIT_TIMEOUT_SLACK = 50  # seconds over --fit-time for start-up, data and the test pass
# versions of what the jobs import (a package missing from a GPU image says MISSING)
ENV_PROBE = ("import importlib, importlib.util, sys, torch; print('python', sys.version); print('torch', torch.__version__, "
             "'cuda', torch.version.cuda, torch.cuda.is_available() and torch.cuda.get_device_name(0)); "
             "[print(m, getattr(importlib.import_module(m), '__version__', '?')) if importlib.util.find_spec(m) "
             "else print(m, 'MISSING') for m in ('pytorch_lightning', 'torchmetrics', 'jsonargparse', 'librosa', "
             "'soundfile', 'rdkit', 'conllu', 'torchvision', 'torchaudio')]")


def vecset(*args: str) -> list[str]:
    """The ``vecset`` command through this interpreter (no console script needed)."""
    return [sys.executable, "-c", 'import sys; from vecset.command import main; sys.argv[0] = "vecset"; main()', *args]


def steps(out: Path, fit_time: int, fmnist_root: str | None) -> list[tuple[str, list[str], int]]:
    """(name, command, timeout in seconds) of each measurement."""
    root = [f"--data.init_args.root={fmnist_root}"] if fmnist_root else []
    clock = f"00:00:{fit_time // 60:02d}:{fit_time % 60:02d}"
    same = ["--trainer.accelerator=gpu", "--trainer.devices=1", "--trainer.precision=bf16-mixed",
            "--trainer.max_epochs=30", f"--trainer.max_time={clock}", "--trainer.enable_progress_bar=false",
            *root]
    fits = [("fmnist_attention", ["fit", "--config", "configs/fashion_mnist_gpu.yaml", *same,
                                  f"--trainer.default_root_dir={out / 'fmnist_attention'}"]),
            ("fmnist_cnn", ["fit", "--config", "configs/fashion_mnist_cnn.yaml", *same,
                            "--data.init_args.num_workers=5", f"--trainer.default_root_dir={out / 'fmnist_cnn'}"])]
    return [("env", ["bash", "-c", f"nvidia-smi; {sys.executable} -c \"{ENV_PROBE}\""], 40),
            ("test_cuda", [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-rs",
                           f"--junitxml={out / 'test_cuda.xml'}", "tests/pipelines/test_cuda.py"], 90),
            ("gpu_jobs", [sys.executable, "bench/gpu_jobs.py", "--device", "cuda", "--steps", "20", "--warmup", "5",
                          "--out", str(out / "gpu_jobs.json"), "--notes", "bench/gpu_check.py"], 170),
            *[(name, vecset(*cmd), fit_time + FIT_TIMEOUT_SLACK) for name, cmd in fits]]


def dry_run(plan: list[tuple[str, list[str], int]], out: Path) -> Path:
    """Each command parsed, none run (seconds, in this process): ``{name}.txt`` holds what the
    parse printed or its error; ``summary.json`` each step's ``rc`` (0: it parses)."""
    import contextlib
    import importlib.util
    import io
    import traceback

    sys.path.insert(0, str(ROOT))
    summary = {"dry": True, "timeouts_sum_s": sum(t for _, _, t in plan), "steps": []}
    for name, cmd, timeout in plan:
        text, rc = io.StringIO(), 0
        try:
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
                if name == "env":
                    exec(ENV_PROBE, {})  # noqa: S102 - our own constant
                elif name == "test_cuda":
                    path = ROOT / cmd[-1]
                    spec = importlib.util.spec_from_file_location("gpu_check_test_cuda", path)
                    spec.loader.exec_module(importlib.util.module_from_spec(spec))
                    print(f"imported {path}")
                elif name == "gpu_jobs":
                    from bench import gpu_jobs
                    print(gpu_jobs.parser().parse_args(cmd[2:]))
                else:
                    from vecset.pipelines.cli import run_cli
                    try:
                        run_cli([*cmd[3:], "--print_config"])
                    except SystemExit as e:
                        rc = e.code or 0
        except Exception:  # noqa: BLE001 - the step's failure is its result
            rc = 1
            text.write(traceback.format_exc())
        (out / f"{name}.txt").write_text(text.getvalue())
        summary["steps"].append({"step": name, "command": cmd, "timeout_s": timeout, "rc": rc})
        print(f"{name:<18} rc {rc} (parsed, not run)  -> {out / (name + '.txt')}", flush=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return out / "summary.json"


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=os.environ.get("OUT"), help="the folder for everything (default $OUT)")
    ap.add_argument("--dry", action="store_true", help="parse every command, run none (seconds, on the CPU)")
    ap.add_argument("--fit-time", type=int, default=90, help="seconds of each Fashion-MNIST fit (max_time)")
    ap.add_argument("--fmnist-root", help="folder of the four Fashion-MNIST .gz files")
    ap.add_argument("--deps", help="folder of packages installed with pip --target, put on PYTHONPATH")
    ap.add_argument("--only", nargs="*", help="run these steps alone (env test_cuda gpu_jobs fmnist_attention fmnist_cnn)")
    args = ap.parse_args(argv)
    if args.out is None:
        ap.error("--out: no folder given and $OUT is not set")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    plan = steps(out, args.fit_time, args.fmnist_root)
    if args.dry:
        return dry_run(plan, out)
    total = sum(t for _, _, t in plan)
    if not args.dry and total > 590:
        ap.error(f"--fit-time {args.fit_time}: the timeouts sum to {total} s, over the 10 minutes a GPU session "
                 "has for one command; use a shorter --fit-time")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), args.deps, os.environ.get("PYTHONPATH"))
                                                       if p)}
    summary = {"dry": args.dry, "timeouts_sum_s": total, "steps": []}
    for name, cmd, timeout in plan:
        if args.only and name not in args.only:
            continue
        t0 = time.perf_counter()
        with open(out / f"{name}.txt", "w") as log:
            try:
                rc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode
                timed_out = False
            except subprocess.TimeoutExpired:
                rc, timed_out = None, True
        row = {"step": name, "command": cmd, "timeout_s": timeout, "rc": rc, "timed_out": timed_out,
               "seconds": round(time.perf_counter() - t0, 1)}
        summary["steps"].append(row)
        print(f"{name:<18} rc {rc}  {row['seconds']:>6.1f} s{'  TIMED OUT' if timed_out else ''}  -> {out / (name + '.txt')}",
              flush=True)
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return out / "summary.json"


if __name__ == "__main__":
    main()
