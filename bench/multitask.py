"""Multi-task against single-task at the same number of optimizer steps.

Runs ``configs/multitask.yaml`` for ``--steps`` optimizer steps, then, for each of its tasks,
a single-task run built from the same pieces (that task's encoder and head, the same
backbone settings, optimizer and data) for the same number of steps. Prints one table
(task, metric, multi-task, single-task, difference, target met) and writes
``bench/results/multitask.json`` (the README's table; ``vecset fit`` prints only its own run's
metrics).

Target (issue 7): each task within 2 points of accuracy or 10% of RMSE of its single-task
result.

    python bench/multitask.py --steps 400
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VECSET = str(Path(sys.executable).with_name("vecset"))


def fit(config: Path, steps: int) -> dict:
    """Run ``vecset fit`` for exactly ``steps`` optimizer steps; return its results.json."""
    cmd = [VECSET, "fit", "--config", str(config), f"--trainer.max_steps={steps}", "--trainer.max_epochs=-1",
           "--trainer.max_time=null", "--trainer.enable_progress_bar=false", "--plots=false"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("VECSET_RUN")}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("results: ")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return json.loads((ROOT / lines[-1].split("results: ", 1)[1]).read_text())


def single_task_configs(multi: dict, out_dir: Path) -> dict[str, Path]:
    """One TaskModule config per task, from the multi-task config's pieces."""
    init = multi["model"]["init_args"]
    paths = {}
    for task in init["encoders"]:
        cfg = {
            "seed_everything": multi.get("seed_everything", 0),
            "trainer": multi["trainer"],
            "model": {"class_path": "vecset.pipelines.TaskModule", "init_args": {
                "encoder": init["encoders"][task], "backbone": init["backbone"], "head": init["heads"][task],
                **{k: init[k] for k in ("lr", "weight_decay", "warmup") if k in init}}},
            "data": multi["data"]["init_args"]["tasks"][task],
        }
        paths[task] = out_dir / f"single_{task}.yaml"
        paths[task].write_text(yaml.safe_dump(cfg, sort_keys=False))
    return paths


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", type=Path, default=ROOT / "configs" / "multitask.yaml")
    ap.add_argument("--steps", type=int, default=400)
    args = ap.parse_args()
    multi_cfg = yaml.safe_load(args.config.read_text())
    out_dir = ROOT / "runs" / "bench_multitask"
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"multi-task: {args.config} for {args.steps} steps", flush=True)
    multi = fit(args.config, args.steps)
    rows = []
    for task, path in single_task_configs(multi_cfg, out_dir).items():
        print(f"single-task: {task} for {args.steps} steps", flush=True)
        single = fit(path, args.steps)
        for metric, higher_better in (("acc", True), ("rmse", False)):
            if f"test_{metric}" not in single["test"]:
                continue
            m, s = multi["test"][f"{task}/test_{metric}"], single["test"][f"test_{metric}"]
            ok = m >= s - 0.02 if higher_better else m <= 1.10 * s
            rows.append({"task": task, "metric": f"test_{metric}", "multitask": m, "single_task": s,
                         "difference": m - s, "target": "within 2 points" if higher_better else "within 10%",
                         "met": ok, "single_wall_s": single["wall_seconds"]})
    print(table(rows, ["task", "metric", "multitask", "single_task", "difference", "target", "met", "single_wall_s"]))
    path = write_json("multitask", {"config": str(args.config.relative_to(ROOT)), "steps": args.steps,
                                    "multitask_wall_s": multi["wall_seconds"], "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
