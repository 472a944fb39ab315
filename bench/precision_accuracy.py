"""Accuracy at equal steps: the same config and seed trained in fp32 (``32-true``) and in the
``auto`` precision (bf16-mixed on a CPU with bf16 units), each run's test metrics side by side.

    python bench/precision_accuracy.py --config configs/debug.yaml --seeds 0 1 2
    python bench/precision_accuracy.py --config configs/speech_frames.yaml --seeds 0 --args --trainer.max_epochs 5

Rows are appended to bench/results/precision_accuracy.json (one file for every job), each with
the load average before it; times are under whatever else ran (compare metrics, not seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import RESULTS, run_fit, write_json  # noqa: E402

PRECISIONS = ("32-true", "auto")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--out", default="precision_accuracy")
    ap.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS)
    ap.add_argument("--args", nargs=argparse.REMAINDER, default=[], help="more vecset fit arguments (last)")
    args = ap.parse_args()
    path = RESULTS / f"{args.out}.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    rows = old.get("rows", [])
    name = Path(args.config).stem
    for seed in args.seeds:
        for prec in args.precisions:
            load = os.getloadavg()
            # auto must really choose here: the test suite's override would pin it to fp32
            env = {"VECSET_AUTO_PRECISION": ""}
            res = run_fit(args.config, ["--seed_everything", str(seed), "--trainer.precision", prec,
                                        "--trainer.default_root_dir", f"runs/precision_accuracy/{name}_{prec}_{seed}",
                                        "--trainer.enable_progress_bar", "false", *args.args], env=env)
            if res["returncode"]:
                raise SystemExit(f"{args.config} seed {seed} {prec} failed: {res['error']}")
            r = json.loads((res["run_dir"] / "results.json").read_text())
            row = {"config": args.config, "extra_args": " ".join(args.args), "seed": seed, "requested": prec,
                   "precision": r.get("precision"), "test": r.get("test"), "best_val": r.get("best_val"),
                   "epochs": r.get("epochs"), "global_steps": r.get("global_steps"),
                   "train_seconds": r.get("train_seconds"), "load_before": [round(x, 2) for x in load]}
            rows.append(row)
            print(json.dumps(row), flush=True)
            write_json(args.out, {**{k: v for k, v in old.items() if k not in ("machine", "command", "rows")},
                                  "rows": rows})


if __name__ == "__main__":
    main()
