"""One backbone across the molecule sets (issue #31): configs/multitask_molecules.yaml (FreeSolv
random split 0, solubility's published split, B3DB scaffold split 0: the splits of
bench/molecule_pretrain.py) trained once; each task's epoch chosen on its own validation split
(``task_checkpoints``: ``best-<task>-epoch<e>.ckpt``), that checkpoint tested, and the task's test
metric printed next to none / pretrained (bench/results/molecule_pretrain_<set>.json, same split)
and the random forest. Also counts, per task, its test molecules in the other tasks' training
splits and in the pretraining set (``pipelines/data/overlap.py``). Writes
bench/results/molecule_multitask.json.

    python bench/molecule_multitask.py --steps 1200
    python bench/molecule_multitask.py --steps 600 --freesolv-split 3 --out bench/results/molecule_multitask_split3.json

``--freesolv-split S``: FreeSolv on its random split S (the others keep theirs), compared with
none / pretrained and the forest on that split.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.molecule_pretrain import CKPT, METRIC, ROOT, score  # noqa: E402

CONFIG = "configs/multitask_molecules.yaml"
PRETRAIN_CSV = "data/molecules/moses_10k.csv"
# the random forest on RDKit descriptors, same splits (bench/molecule_baselines.py)
FOREST = {"freesolv": ("molecule_baselines.json", "freesolv"), "solubility": ("molecule_baselines_solubility.json",
          "solubility"), "b3db": ("molecule_b3db_rf.json", "b3db_scaffold")}


def loadavg() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


def fit(steps: int, extra: list[str], name: str) -> Path:
    env = os.environ | {"VECSET_RUN_NAME": name, "VECSET_RUN_VERSION": "0", "OMP_WAIT_POLICY": "PASSIVE"}
    args = [str(Path(sys.executable).parent / "vecset"), "fit", "--config", CONFIG, "--trainer.enable_progress_bar=false",
            f"--trainer.max_steps={steps}", "--trainer.max_time=00:00:35:00", "--plots=false", *extra]
    with open(ROOT / "runs" / f"{name}.log", "w") as log:
        if subprocess.run(["nice", "-n", "5", *args], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT).returncode:
            raise SystemExit(f"fit failed, see runs/{name}.log")
    return ROOT / "runs" / name / "version_0"


def test(run: Path, ckpt: Path, plots: bool) -> tuple[dict, Path]:
    """``vecset test`` of ``ckpt`` with the run's config, in this process: the logged test metrics
    (every task's) and the test run's directory (its reports)."""
    from vecset.pipelines.cli import run_cli

    with contextlib.redirect_stdout(io.StringIO()):
        cli = run_cli(["test", "--config", str(run / "config.yaml"), "--ckpt_path", str(ckpt),
                       "--trainer.enable_progress_bar=false", f"--plots={str(plots).lower()}"])
    return {k: float(v) for k, v in cli.trainer.callback_metrics.items()}, Path(cli.trainer.log_dir)


def task_score(task: str, metrics: dict, test_dir: Path) -> float:
    if task == "b3db":  # ROC-AUC: the binary report of the test run
        return json.loads(next((test_dir / "b3db").rglob("test_binary.json")).read_text())["roc_auc"]
    return metrics[f"{task}/test_rmse"]


def best_val(run: Path, task: str, epoch: int) -> dict:
    """The task's validation metrics at ``epoch`` (the run's metrics.csv)."""
    with open(run / "metrics.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("epoch") == str(epoch)]
    return {k: float(v) for r in rows for k, v in r.items() if k.startswith(f"{task}/val_") and v}


def earlier(task: str, split: int = 0) -> dict:
    """none / pretrained and the forest on the task's split ``split``, from the existing JSONs."""
    out = {}
    pre = ROOT / "bench" / "results" / f"molecule_pretrain_{task}.json"
    if pre.exists():
        row = next((r for r in json.loads(pre.read_text())["splits"] if r["split"] == split), None)
        out |= {k: score(row[k], METRIC[task]) for k in ("none", "pretrained")} if row else {}
    name, key = FOREST[task]
    rows = json.loads((ROOT / "bench" / "results" / name).read_text())["datasets"][key]["splits"]
    forest = next((r["random_forest"] for r in rows if r["split"] == split), None)
    if forest:
        out["forest"] = forest["roc_auc" if task == "b3db" else "test_rmse"]
    return out


def overlap_counts(freesolv_split: int = 0) -> dict:
    """Per task, its test molecules in the other tasks' training splits and in the pretraining set."""
    from dataclasses import replace

    import yaml

    from vecset.encoders.graph import canonical_smiles
    from vecset.pipelines import MoleculeDataModule
    from vecset.pipelines.data.overlap import overlap_with_test

    tasks = {t: MoleculeDataModule(**spec["init_args"])
             for t, spec in yaml.safe_load((ROOT / CONFIG).read_text())["data"]["init_args"]["tasks"].items()}
    tasks["freesolv"].split = replace(tasks["freesolv"].split, seed=freesolv_split)
    for dm in tasks.values():
        dm.setup("fit")
    with open(ROOT / PRETRAIN_CSV, newline="") as f:
        pretraining = {canonical_smiles(r["smiles"]) for r in csv.DictReader(f)}
    return overlap_with_test(tasks, {"pretraining": pretraining})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1200, help="optimizer steps (each a batch of every task)")
    ap.add_argument("--extra", nargs="*", default=[], help="more CLI arguments for the fit")
    ap.add_argument("--freesolv-split", type=int, default=0, help="FreeSolv's random split (module docstring)")
    ap.add_argument("--name", default="bench_multitask_molecules")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "molecule_multitask.json"))
    args = ap.parse_args()
    (ROOT / "runs").mkdir(exist_ok=True)
    load0, t0 = loadavg(), time.time()
    split = ["--data.init_args.tasks.freesolv.init_args.split.seed", str(args.freesolv_split)]
    run = fit(args.steps, [*split, *args.extra], args.name)
    fit_seconds = round(time.time() - t0, 1)
    results = json.loads((run / "results.json").read_text())
    rows = {}
    for task in ("freesolv", "solubility", "b3db"):
        ckpt = next((run / "checkpoints").glob(f"best-{task}-epoch*.ckpt"))
        metrics, test_dir = test(run, ckpt, plots=task == "b3db")
        rows[task] = {"metric": "roc_auc" if task == "b3db" else "test_rmse", "checkpoint": str(ckpt.relative_to(ROOT)),
                      "epoch": int(ckpt.stem.rsplit("epoch", 1)[1]), "multitask": task_score(task, metrics, test_dir),
                      "val": best_val(run, task, int(ckpt.stem.rsplit("epoch", 1)[1])),
                      "test_metrics": {k: v for k, v in metrics.items() if k.startswith(f"{task}/test")}} | earlier(
                          task, args.freesolv_split if task == "freesolv" else 0)
    record = {
        "command": "python bench/molecule_multitask.py " + " ".join(sys.argv[1:]), "config": CONFIG,
        "pretrained_checkpoint_compared": CKPT, "loadavg_at_start": load0, "loadavg_at_end": loadavg(),
        "freesolv_split": args.freesolv_split, "fit_seconds": fit_seconds, "steps": results["global_steps"], "epochs": results["epochs"],
        "fit_results": {k: results[k] for k in ("monitor", "best_val", "test", "train_seconds", "setup_seconds")},
        "run_dir": str(run.relative_to(ROOT)), "tasks": rows, "notes": ""}
    Path(args.out).write_text(json.dumps(record, indent=1))
    print(f"{'set':11s} {'metric':9s} {'epoch':>5s} {'none':>7s} {'pretr.':>7s} {'multi':>7s} {'forest':>7s}")
    for task, r in rows.items():
        print(f"{task:11s} {r['metric']:9s} {r['epoch']:5d} {r.get('none', float('nan')):7.4f} "
              f"{r.get('pretrained', float('nan')):7.4f} {r['multitask']:7.4f} {r.get('forest', float('nan')):7.4f}")
    record["test_overlap"] = overlap = overlap_counts(args.freesolv_split)
    print("test molecules also in another task's training split / the pretraining set:", json.dumps(overlap))
    Path(args.out).write_text(json.dumps(record, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
