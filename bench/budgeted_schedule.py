"""The time-aware schedule measured (issue 57): finished ``vecset fit`` runs of
configs/multitask.yaml (``make run``) side by side: each task's test metric, the steps done of
``max_steps``, the rate the schedule had reached at the end (``last.ckpt``'s scheduler) and the
time used, with the load average sampled while they ran. The runs themselves are started by
hand (one CPU thread each, 14 minutes; the command is in bench/logs/2026-12-06-budgeted-schedule.md):

    python bench/budgeted_schedule.py --run budgeted=runs/multitask/version_0 \
        --run cut=/tmp/cut/runs/multitask/version_0 --load /tmp/sched/ab_load.txt \
        --reference "idle, step schedule (5ad8de9's docs)=0.767,0.933,1.019" \
        --reference "busy, cut at max_time (issue 57)=0.735,0.853,0.933"
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import yaml  # noqa: E402

from bench.common import table, write_json  # noqa: E402

METRICS = [("speech", "speech/test_acc"), ("digits", "digits/test_acc"), ("freesolv_rmse", "freesolv/test_rmse")]


def summary(label: str, run: Path) -> dict:
    results = json.loads((run / "results.json").read_text())
    config = yaml.safe_load((run / "config.yaml").read_text())
    trainer = config["trainer"]
    ckpt = torch.load(run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    clock = ckpt["callbacks"].get("TrainingClock", {})
    peak = ckpt["lr_schedulers"][0]["base_lrs"][0]
    return {"run": label, "dir": str(run), "seed": config["seed_everything"],
            "schedule": config["model"]["init_args"].get("schedule"), "best_val_loss": results["best_val"],
            **{k: results["test"][m] for k, m in METRICS},
            "steps": results["global_steps"], "max_steps": trainer["max_steps"], "max_time": trainer["max_time"],
            "train_seconds": results["train_seconds"], "epochs": results["epochs"],
            "last_lr_of_peak": ckpt["lr_schedulers"][0]["_last_lr"][0] / peak,
            "clock_seconds_used": clock.get("seconds_used"), "tested_checkpoint": Path(results["checkpoint"]).name}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", action="append", required=True, help="label=run folder")
    ap.add_argument("--reference", action="append", default=[], help="label=speech,digits,freesolv_rmse")
    ap.add_argument("--load", help="a file of lines 'HH:MM:SS <the /proc/loadavg fields> ...' sampled during the runs")
    ap.add_argument("--note", default="")
    ap.add_argument("--out", default="budgeted_schedule")
    args = ap.parse_args()
    rows = [summary(label, Path(run)) for label, run in (spec.split("=", 1) for spec in args.run)]
    for spec in args.reference:
        label, values = spec.split("=", 1)
        rows.append({"run": label, **dict(zip([k for k, _ in METRICS], map(float, values.split(",")), strict=True))})
    load = []
    if args.load:
        for line in Path(args.load).read_text().splitlines():
            parts = line.split()
            load.append({"time_utc": parts[0], "load1": float(parts[1]), "load5": float(parts[2])})
    print(table(rows, ["run", "best_val_loss", "speech", "digits", "freesolv_rmse", "steps", "max_steps", "last_lr_of_peak",
                       "train_seconds", "tested_checkpoint"]))
    if load:
        ones = [x["load1"] for x in load]
        print(f"\nload average (1 min) while running: {min(ones):.1f}-{max(ones):.1f} on {len(ones)} samples")
    path = write_json(args.out, {"note": args.note, "rows": rows, "load": load})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
