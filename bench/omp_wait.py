"""The ``vecset`` command beside another CPU-bound process, with and without
``OMP_WAIT_POLICY=PASSIVE`` (issue #27).

Two ways to start the same short fit (configs/freesolv.yaml for 3 epochs, torch's default
thread count):

- ``before``: the entry point as it was, ``from vecset.pipelines.cli import main; main()``,
  with OMP_WAIT_POLICY unset (libgomp's default: a thread spins for a while at the end of a
  parallel region before it sleeps);
- ``vecset``: the installed ``vecset`` command (vecset/command.py), which sets PASSIVE when
  the variable is unset (it is unset here too);

each alone and beside a competitor this script starts: one process with one thread doing
matrix multiplies in a loop, holding one core (another training job, say). The cases take
turns, repeat by repeat, so that a change in the machine's load meets them all.

    python bench/omp_wait.py [--repeats 3] [--epochs 3]

Prints a table (medians over the repeats of the training loop's seconds, from results.json,
and the process's wall seconds) and the ratios before / vecset, and writes
bench/results/omp_wait.json with every run and the load average before each.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from bench.common import table, write_json  # noqa: E402

CONFIG = "configs/freesolv.yaml"
# the competitor: one thread of matrix multiplies, forever; says "ready" once it runs
COMPETITOR = """
import torch
torch.set_num_threads(1)
a = torch.randn(768, 768)
a @ a
print("ready", flush=True)
while True:
    a @ a
"""
BEFORE = "from vecset.pipelines.cli import main; main()"  # pyproject's entry point until issue #27


def command(entry: str) -> list[str]:
    if entry == "before":
        return [sys.executable, "-c", BEFORE]
    script = Path(sys.executable).with_name("vecset")
    if not script.exists():
        raise SystemExit(f"{script} is missing: install the project (make install) for the vecset command")
    return [str(script)]


def one_fit(entry: str, overrides: Path, log: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "VECSET_RUN_VERSION", "VECSET_RUN_NAME")}
    env["PYTHONPATH"] = str(ROOT)
    load = os.getloadavg()
    t0 = time.perf_counter()
    out = subprocess.run([*command(entry), "fit", "--config", CONFIG, "--config", str(overrides), "--plots", "false"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    secs = time.perf_counter() - t0
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(out.stdout + "\n--- stderr ---\n" + out.stderr)
    if out.returncode:
        raise SystemExit(f"{entry}: vecset fit failed (exit {out.returncode}); see {log}")
    found = re.findall(r"^results: (\S+)$", out.stdout, re.M)
    if not found:
        raise SystemExit(f"{entry}: no 'results: <path>' line in the output; see {log}")
    res = json.loads((ROOT / found[-1]).read_text())
    return {"train_seconds": res["train_seconds"], "process_seconds": round(secs, 2), "epochs": res["epochs"],
            "load_average_before": load, "run_dir": str(Path(found[-1]).parent)}


def with_competitor(fn):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    comp = subprocess.Popen([sys.executable, "-c", COMPETITOR], env=env, stdout=subprocess.PIPE, text=True)
    try:
        if comp.stdout.readline().strip() != "ready":
            raise SystemExit("the competing process did not start")
        return fn()
    finally:
        comp.kill()
        comp.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    work = ROOT / "runs" / "omp_wait"
    overrides = work / "omp_wait.yaml"  # the last --config names the run directory: runs/omp_wait/
    work.mkdir(parents=True, exist_ok=True)
    overrides.write_text(yaml.safe_dump({"trainer": {"max_epochs": args.epochs, "max_time": None,
                                                     "enable_progress_bar": False}}))
    cases = [(entry, beside) for beside in (False, True) for entry in ("before", "vecset")]
    runs = []
    for r in range(args.repeats):
        for entry, beside in cases:
            log = work / "logs" / f"{entry}_{'beside' if beside else 'alone'}_{r}.log"
            fit = functools.partial(one_fit, entry, overrides, log)
            rec = {"entry": entry, "competitor": beside, "repeat": r, **(with_competitor(fit) if beside else fit())}
            runs.append(rec)
            print(f"repeat {r}: {entry:6s} {'beside a competitor' if beside else 'alone':19s} "
                  f"train {rec['train_seconds']:.1f} s, process {rec['process_seconds']:.1f} s, "
                  f"load {rec['load_average_before'][0]:.2f}", flush=True)
    rows = []
    for entry, beside in cases:
        mine = [x for x in runs if x["entry"] == entry and x["competitor"] == beside]
        rows.append({"entry": entry, "competitor": "one process" if beside else "none",
                     "train_s_median": statistics.median(x["train_seconds"] for x in mine),
                     "train_s_min": min(x["train_seconds"] for x in mine),
                     "train_s_max": max(x["train_seconds"] for x in mine),
                     "process_s_median": statistics.median(x["process_seconds"] for x in mine)})
    med = {(r["entry"], r["competitor"]): r for r in rows}
    ratios = {c: {"train": med[("before", c)]["train_s_median"] / med[("vecset", c)]["train_s_median"],
                  "process": med[("before", c)]["process_s_median"] / med[("vecset", c)]["process_s_median"]}
              for c in ("none", "one process")}
    print(table(rows, ["entry", "competitor", "train_s_median", "train_s_min", "train_s_max", "process_s_median"]))
    for c, rt in ratios.items():
        print(f"competitor {c}: before / vecset = {rt['train']:.2f}x (training), {rt['process']:.2f}x (process)")
    path = write_json("omp_wait", {
        "config": CONFIG, "epochs": args.epochs, "repeats": args.repeats, "competitor": "1 thread, 768x768 matmul loop",
        "load_average_at_end": os.getloadavg(), "rows": rows, "ratio_before_over_vecset": ratios, "runs": runs})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
