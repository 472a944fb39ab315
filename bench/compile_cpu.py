"""Does ``CompileModel`` (torch.compile of the model's parts) pay on this CPU? Items/s of a job's
training steps with and without it, in fresh processes taking turns (eager, compiled, eager, ...),
timed after the warm-up steps (which hold the compile), as bench/checkout_ratio.py times them.

    python bench/compile_cpu.py --jobs digits freesolv --pairs 2

Prints a table and writes ``bench/results/compile_cpu.json`` (per job: items/s eager and
compiled per pair, their ratios and the median ratio, compiled / eager).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.checkout_ratio import JOBS, ROOT, commit_of, timed_run  # noqa: E402

COMPILED = ["--trainer.callbacks+=vecset.pipelines.CompileModel"]


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", nargs="+", choices=sorted(JOBS), default=["digits", "freesolv"])
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=None, help="timed steps (default: the job's)")
    args = ap.parse_args(argv)
    rows = []
    print(f"{'job':<16}{'eager items/s':>15}{'compiled':>12}{'ratio (median)':>16}  ratios")
    for job in args.jobs:
        config, steps = JOBS[job]
        steps = args.steps or steps
        eager, compiled = [], []
        for _ in range(args.pairs):
            eager.append(timed_run(ROOT, config, steps, []))
            compiled.append(timed_run(ROOT, config, steps, COMPILED))
        ratios = [c / e for c, e in zip(compiled, eager, strict=True)]
        rows.append({"job": job, "config": config, "timed_steps": steps, "items_per_s_eager": eager,
                     "items_per_s_compiled": compiled, "ratios": ratios, "ratio_median": statistics.median(ratios)})
        print(f"{job:<16}{statistics.median(eager):>15.1f}{statistics.median(compiled):>12.1f}"
              f"{rows[-1]['ratio_median']:>16.3f}  {', '.join(f'{r:.3f}' for r in ratios)}", flush=True)
    out = ROOT / "bench" / "results" / "compile_cpu.json"
    out.write_text(json.dumps({"command": "python bench/compile_cpu.py " + " ".join(argv or sys.argv[1:]),
                               "commit": commit_of(ROOT), "threads": 2, "load_before": os.getloadavg(),
                               "rows": rows}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return out


if __name__ == "__main__":
    main()
