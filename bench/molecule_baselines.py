"""Molecule property baselines on the same splits: a random forest on RDKit 2-D descriptors
(``RandomForestRegressor(500, random_state=0)``, Breiman 2001) vs our graph transformer.

FreeSolv: the five random 80/10/10 splits ``numpy.random.default_rng(s).permutation(642)``,
s = 0..4. Solubility: the published split, 10% of its training part validating.
Our model trains through ``vecset fit --config configs/<dataset>.yaml`` (one process per
split; its ``results.json`` gives the test RMSE of the best-validation checkpoint and the
training seconds). Prints a table, writes ``bench/results/molecule_baselines.json``.

B3DB (blood-brain barrier, classification; ``configs/b3db.yaml``): ``b3db_scaffold`` (Bemis-Murcko
scaffold groups in ``split_seed``'s order, 80/10/10) and ``b3db_random``; the forest is
``RandomForestClassifier(500, random_state=0)``; ROC-AUC, PR-AUC and accuracy (threshold 0.5) of
P(BBB+), for vecset read from its run's ``test_binary.json``.

    OMP_WAIT_POLICY=PASSIVE python bench/molecule_baselines.py                # FreeSolv and solubility
    python bench/molecule_baselines.py --datasets freesolv --splits 0 1 --skip-model
    python bench/molecule_baselines.py --datasets b3db_scaffold b3db_random --out bench/results/molecule_b3db.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vecset.pipelines.molecules.data import MoleculeDataModule, rmse  # noqa: E402
from vecset.pipelines.molecules.options import MoleculeFeatures, MoleculeSplit  # noqa: E402

DATASETS = {
    "freesolv": {"config": "configs/freesolv.yaml", "csv": "data/molecules/freesolv.csv", "target": "expt",
                 "split": "random", "splits": [0, 1, 2, 3, 4]},
    "solubility": {"config": "configs/solubility.yaml", "csv": "data/molecules/solubility.csv", "target": "logS",
                   "split": "column", "splits": [0]},
    # blood-brain barrier (classification): ROC-AUC etc. instead of RMSE
    "b3db_scaffold": {"config": "configs/b3db.yaml", "csv": "data/molecules/b3db.csv", "label": "label",
                      "classes": ["BBB-", "BBB+"], "split": "scaffold_random", "splits": [0]},
    "b3db_random": {"config": "configs/b3db.yaml", "csv": "data/molecules/b3db.csv", "label": "label",
                    "classes": ["BBB-", "BBB+"], "split": "random", "splits": [0]},
}


def data_module(name: str, split_seed: int) -> MoleculeDataModule:
    spec = DATASETS[name]
    task = ({"label_column": spec["label"], "classes": spec["classes"]} if "label" in spec
            else {"target_columns": [spec["target"]]})
    return MoleculeDataModule(str(ROOT / spec["csv"]), split=MoleculeSplit(method=spec["split"], seed=split_seed), features=MoleculeFeatures(descriptors=True), **task)


def descriptor_matrix(items: list[dict]) -> np.ndarray:
    # float32 range (sklearn casts); NaN is handled by the forest's missing-value support
    return np.clip(np.stack([it["raw_desc"] for it in items]), -1e30, 1e30)


def random_forest_classifier(name: str, split_seed: int) -> dict:
    """``RandomForestClassifier(500, random_state=0)`` on RDKit descriptors: ROC-AUC, PR-AUC,
    accuracy of P(class 1), scored by the same torchmetrics functions as vecset's report."""
    import torch
    from sklearn.ensemble import RandomForestClassifier

    from vecset.pipelines.reports.binary import binary_scores

    dm = data_module(name, split_seed)
    dm.setup("fit")
    y_tr = np.array([int(it["y"]) for it in dm.splits["train"]])
    y_te = np.array([int(it["y"]) for it in dm.splits["test"]])
    rf = RandomForestClassifier(500, random_state=0, n_jobs=1)
    t0 = time.time()
    rf.fit(descriptor_matrix(dm.splits["train"]), y_tr)
    secs = time.time() - t0
    prob = rf.predict_proba(descriptor_matrix(dm.splits["test"]))[:, list(rf.classes_).index(1)]
    return {**binary_scores(torch.tensor(prob, dtype=torch.float32), torch.tensor(y_te)),
            "train_seconds": round(secs, 1), "n_train": len(y_tr), "n_test": len(y_te),
            "class_balance": dm.class_balance()}


def random_forest(name: str, split_seed: int) -> dict:
    from sklearn.ensemble import RandomForestRegressor

    if "label" in DATASETS[name]:
        return random_forest_classifier(name, split_seed)
    dm = data_module(name, split_seed)
    dm.setup("fit")

    def xy(items):
        return descriptor_matrix(items), np.array([float(it["y"][0]) for it in items])

    x_tr, y_tr = xy(dm.splits["train"])
    x_te, y_te = xy(dm.splits["test"])
    rf = RandomForestRegressor(500, random_state=0, n_jobs=1)
    t0 = time.time()
    rf.fit(x_tr, y_tr)
    secs = time.time() - t0
    return {"test_rmse": rmse(rf.predict(x_te), y_te), "train_seconds": round(secs, 1),
            "n_train": len(y_tr), "n_test": len(y_te)}


def our_model(name: str, split_seed: int, extra: list[str], log_dir: Path, member: int | None = None) -> dict:
    spec = DATASETS[name]
    run_name = f"bench_{name}_s{split_seed}" + (f"_m{member}" if member is not None else "")
    cfg = ROOT / spec["config"]
    # a copy named per split gives each run its own runs/<name>/ folder
    tmp = ROOT / "runs" / "bench_configs" / f"{run_name}.yaml"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(cfg.read_text())
    cmd = [sys.executable, "-m", "vecset", "fit", "--config", str(tmp),
           "--data.init_args.split.seed", str(split_seed), "--data.init_args.split.method", spec["split"], *extra]
    if member is not None:  # ensemble members differ only in their initialization/shuffling seed
        cmd += ["--seed_everything", str(member)]
    log = log_dir / f"{run_name}.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("VECSET_RUN_VERSION", None)
    t0 = time.time()
    with open(log, "w") as f:
        subprocess.run(cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT, check=True)
    total = time.time() - t0
    runs = sorted((ROOT / "runs" / run_name).glob("version_*"), key=lambda p: int(p.name.split("_")[1]))
    res = json.loads((runs[-1] / "results.json").read_text())
    if "label" in spec:  # classification: the report's ROC-AUC, PR-AUC, accuracy
        binary = json.loads((runs[-1] / "test_binary.json").read_text())
        return {**{k: binary[k] for k in ("roc_auc", "pr_auc", "accuracy")}, **seconds(res),
                "process_seconds": round(total, 1), "epochs": res["epochs"], "best_val_acc": res["best_val"],
                "run_dir": str(runs[-1].relative_to(ROOT))}
    return {"test_rmse": res["test"]["test_rmse"], **seconds(res),
            "process_seconds": round(total, 1), "epochs": res["epochs"], "best_val_rmse": res["best_val"],
            "run_dir": str(runs[-1].relative_to(ROOT))}


def seconds(res: dict) -> dict:
    """Training seconds (from the first training step: what ``max_time`` limits) and the data
    module's setup seconds (featurization) of a run's results.json."""
    return {"train_seconds": res.get("train_seconds", res["wall_seconds"]), "setup_seconds": res.get("setup_seconds")}


def ensemble(name: str, split_seed: int, extra: list[str], log_dir: Path, members: int) -> dict:
    """``python -m vecset.pipelines.ensemble --members k`` (seeds 0..k-1, same split) in its own
    process; its ensemble.json gives the combined validation and test RMSE (ROC-AUC for B3DB)
    and the seconds."""
    spec = DATASETS[name]
    run_name = f"bench_{name}_s{split_seed}_x{members}"
    tmp = ROOT / "runs" / "bench_configs" / f"{run_name}.yaml"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text((ROOT / spec["config"]).read_text())
    cmd = [sys.executable, "-m", "vecset.pipelines.ensemble", "--members", str(members), "--config", str(tmp),
           "--data.init_args.split.seed", str(split_seed), "--data.init_args.split.method", spec["split"], *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("VECSET_RUN_VERSION", None)
    with open(log_dir / f"{run_name}.log", "w") as f:
        subprocess.run(cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT, check=True)
    root = ROOT / "runs" / f"{run_name}_ensemble"
    out = sorted(root.glob("version_*"), key=lambda p: int(p.name.split("_")[1]))[-1]
    res = json.loads((out / "ensemble.json").read_text())
    if "label" in spec:  # classification: the members' mean probability
        test, val = res["test"], res["val"]
        return {**{k: test["ensemble"][k] for k in ("roc_auc", "pr_auc", "accuracy")},
                "val_roc_auc": val["ensemble"]["roc_auc"], "train_seconds": res["train_seconds"],
                "setup_seconds": res.get("setup_seconds"),
                "member_roc_auc": [m["roc_auc"] for m in test["members"]],
                "member_val_roc_auc": [m["roc_auc"] for m in val["members"]], "run_dir": str(out.relative_to(ROOT))}
    return {"test_rmse": res["test_rmse"], "val_rmse": res["val_rmse"], "train_seconds": res["train_seconds"],
            "setup_seconds": res.get("setup_seconds"),
            "member_test_rmse": res["member_test_rmse"], "member_best_val": res["member_best_val"],
            "nll": res["uncertainty"]["nll"], "miscalibration_area": res["uncertainty"]["miscalibration_area"],
            "spearman_abs_error_std": res["uncertainty"]["spearman_abs_error_std"],
            "run_dir": str(out.relative_to(ROOT))}


def summary(vals: list[float]) -> dict:
    a = np.array(vals)
    return {"mean": float(a.mean()), "std": float(a.std(ddof=1)) if len(a) > 1 else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["freesolv", "solubility"], choices=list(DATASETS))
    ap.add_argument("--splits", nargs="+", type=int, default=None, help="FreeSolv / B3DB split seeds (default 0..4 / 0)")
    ap.add_argument("--skip-model", action="store_true", help="only the random forest")
    ap.add_argument("--skip-rf", action="store_true", help="only our model")
    ap.add_argument("--members", type=int, default=1, help="ensemble size of our model (1: one run)")
    ap.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="extra vecset fit arguments")
    ap.add_argument("--note", default="2 shared CPU cores; timings measured while other jobs ran",
                    help="how the machine was loaded, stored with the table")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "molecule_baselines.json"))
    args = ap.parse_args()

    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    log_dir = ROOT / "runs" / "bench_logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    results: dict = {"command": " ".join(sys.argv), "note": args.note,
                     "datasets": {}}
    for name in args.datasets:
        splits = args.splits if (args.splits is not None and name != "solubility") else DATASETS[name]["splits"]
        rows = []
        for s in splits:
            row = {"split": s}
            if not args.skip_rf:
                row["random_forest"] = random_forest(name, s)
            if not args.skip_model:
                row["ours"] = (our_model(name, s, args.extra, log_dir) if args.members == 1
                               else ensemble(name, s, args.extra, log_dir, args.members))
            rows.append(row)
            print(name, json.dumps(row), flush=True)
        scores = ("roc_auc", "pr_auc", "accuracy") if "label" in DATASETS[name] else ("test_rmse",)
        agg = {m: {**{k: summary([r[m][k] for r in rows]) for k in scores},
                   "train_seconds": summary([r[m]["train_seconds"] for r in rows])}
               for m in ("random_forest", "ours") if m in rows[0]}
        results["datasets"][name] = {"splits": rows, "summary": agg}
        out_path.write_text(json.dumps(results, indent=2))

    print(f"\n{'dataset':<11} {'split':>5} {'RF score':>8} {'RF s':>6} {'ours':>9} {'ours s':>7}  (RMSE; ROC-AUC for b3db)")
    for name, d in results["datasets"].items():
        key = "roc_auc" if "label" in DATASETS[name] else "test_rmse"
        for r in d["splits"]:
            rf, us = r.get("random_forest", {}), r.get("ours", {})
            print(f"{name:<11} {r['split']:>5} {rf.get(key, float('nan')):>8.3f} "
                  f"{rf.get('train_seconds', float('nan')):>6.1f} {us.get(key, float('nan')):>9.3f} "
                  f"{us.get('train_seconds', float('nan')):>7.1f}")
        for m, a in d["summary"].items():
            print(f"{name:<11} {m:>14}: test {key} {a[key]['mean']:.3f} +- {a[key]['std']:.3f}, "
                  f"train {a['train_seconds']['mean']:.0f} +- {a['train_seconds']['std']:.0f} s")
    print(f"results: {out_path}")


if __name__ == "__main__":
    main()
