"""Chemprop (D-MPNN, Yang et al. 2019; Chemprop v2) on vecset's own molecule splits: the field's
standard message-passing baseline beside vecset's designs and the random forest.

    FreeSolv     configs/freesolv.yaml    random splits 0-4      val_rmse, test_rmse (kcal/mol)
    solubility   configs/solubility.yaml  its published split    val_rmse, test_rmse (logS)
    B3DB         configs/b3db.yaml        scaffold_random 0      val_auc, test_auc (ROC-AUC, P(BBB+))

The splits are vecset's: the shipped config's ``MoleculeDataModule`` is set up (its split, the
given ``split_seed``) and its train/val/test molecules (SMILES, target; B3DB: 1 for BBB+, class 1
of ``classes``) are written to one CSV with a ``split`` column, which ``chemprop train
--splits-column split`` reads as it is. Rows the data module skips (B3DB: over 100 heavy atoms)
are counted in each row (``skipped_rows``) and reach neither model. Chemprop runs with its
defaults (listed in the JSON's ``settings``, read from its own argument parser), ``--data-seed``
and ``--pytorch-seed`` the row's seed, on the CPU, one thread (``OMP_NUM_THREADS=1``). Chemprop
keeps the epoch of the best validation loss; that model (``best.pt``) then predicts the
validation and test molecules (``chemprop predict``), scored here by vecset's functions (``rmse``;
``binary_scores``, as in vecset's ``test_binary.json``).

Install Chemprop into its own environment (it needs the ``lightning`` package, vecset uses
``pytorch_lightning``) and give its interpreter with ``--python``:

    python3.11 -m venv ~/cpvenv && ~/cpvenv/bin/pip install chemprop==2.3.1
    python bench/chemprop_baseline.py --python ~/cpvenv/bin/python            # FreeSolv x5, solubility, B3DB
    python bench/chemprop_baseline.py --sets freesolv --splits 0 --seeds 0 1 2
    python bench/chemprop_baseline.py --dry              # 40 FreeSolv molecules, 2 epochs, under /tmp

(``pip install chemprop`` also installs ``cuik_molmaker_pin``, which is built against one RDKit
release and pins it: 2.3.1 takes RDKit 2026.03.6.) The measured results reused vecset's torch: a
``.pth`` file in the new venv's site-packages naming vecset's site-packages, then ``pip install
--no-deps chemprop==2.3.1 cuik_molmaker_pin rdkit==2026.03.6 lightning`` and the pure-Python
packages its import then asked for (multiprocess, psutil, descriptastorus, six, pandas_flavor,
xarray, astartes, tabulate, configargparse, myerson).

Writes ``bench/results/chemprop_baseline.json``: ``command`` (``earlier_commands``: those that
wrote the kept rows), ``chemprop_version``, ``settings``, ``notes``, ``rows`` (``set``, ``split``,
``seed``, ``val_*``, ``test_rmse`` or ``test_auc``, ``train_seconds``: the ``chemprop train``
process's wall time, featurization included, ``best_epoch``, ``epochs``) and ``summary`` (per
set: mean, standard error and std over its rows). Rows already in the file (same Chemprop
version, set, split, seed and epochs) are kept, not run again. Prints a table.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from vecset.pipelines.molecules.data import MoleculeDataModule  # noqa: E402

# set -> (shipped config, its split seeds run by default, the task)
SETS: dict[str, dict] = {
    "freesolv": {"config": "configs/freesolv.yaml", "splits": [0, 1, 2, 3, 4], "task": "regression"},
    "solubility": {"config": "configs/solubility.yaml", "splits": [0], "task": "regression"},
    "b3db": {"config": "configs/b3db.yaml", "splits": [0], "task": "classification"},
}
DRY_SIZES = {"train": 32, "val": 4, "test": 4}  # --dry: 40 FreeSolv molecules of split 0

# Chemprop's defaults, read from its own parser in its interpreter (the D-MPNN's settings)
SETTINGS_CODE = """
import json, configargparse, chemprop
from chemprop.cli.common import add_common_args
from chemprop.cli.train import add_train_args
p = configargparse.ArgumentParser()
add_common_args(p); add_train_args(p)
a = vars(p.parse_args(["--data-path", "x.csv"]))
keys = ["epochs", "patience", "batch_size", "message_hidden_dim", "depth", "dropout", "aggregation",
        "aggregation_norm", "activation", "atom_messages", "ffn_hidden_dim", "ffn_num_layers", "batch_norm",
        "warmup_epochs", "init_lr", "max_lr", "final_lr", "tracking_metric", "multi_hot_atom_featurizer_mode",
        "num_workers"]
print(json.dumps({"chemprop_version": chemprop.__version__,
                  "defaults": {k: str(a[k]) if not isinstance(a[k], (int, float, bool, list, type(None))) else a[k]
                               for k in keys if k in a}}))
"""


def data_module(name: str, split_seed: int) -> MoleculeDataModule:
    """The shipped config's data module (``data.init_args`` of ``SETS[name]["config"]``) with
    ``split_seed``, set up: its splits are the ones ``vecset fit --config`` trains on."""
    cfg = yaml.safe_load((ROOT / SETS[name]["config"]).read_text())["data"]
    # Chemprop reads the SMILES only: the config's 3-D conformers (geometry) and the atom features
    # measured on them (surface) play no part in the split
    args = dict(cfg["init_args"])
    args["split"] = {**args.get("split", {}), "seed": split_seed}
    args["features"] = {**args.get("features", {}), "geometry": False, "surface": False}
    args["csv_path"] = str(ROOT / args["csv_path"])
    dm = MoleculeDataModule(**args)
    dm.setup("fit")
    return dm


def split_rows(dm: MoleculeDataModule) -> list[dict]:
    """One row per molecule of the data module's splits: its CSV ``line``, ``smiles``, ``target``
    (the regression target, or the class index: 1 = the second of ``classes``) and ``split``."""
    rows = []
    for split in ("train", "val", "test"):
        for it in dm.splits[split]:
            y = it["y"]
            target = int(y) if dm.class_names is not None else float(y[0])
            rows.append({"line": it["line"], "smiles": it["smiles"], "target": target, "split": split})
    return rows


def write_csv(rows: list[dict], path: Path, columns: tuple[str, ...] = ("smiles", "target", "split")) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def one_thread_env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def run_logged(cmd: list[str], log: Path) -> float:
    """``cmd`` with its output in ``log``; its wall seconds. A failure is an error naming the
    command, the log and its last lines."""
    t0 = time.perf_counter()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=one_thread_env()).returncode
    if rc != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-15:])
        raise RuntimeError(f"{' '.join(cmd[:3])} ... failed (exit {rc}); log {log}:\n{tail}")
    return time.perf_counter() - t0


def chemprop_settings(python: str) -> dict:
    """Chemprop's version and its defaults, from ``python`` (the interpreter that runs it)."""
    try:
        out = subprocess.run([python, "-c", SETTINGS_CODE], capture_output=True, text=True, env=one_thread_env())
    except FileNotFoundError:
        raise SystemExit(f"--python {python}: no such interpreter") from None
    if out.returncode != 0:
        raise SystemExit(f"--python {python}: cannot import chemprop 2.x ({out.stderr.strip().splitlines()[-1:]}); "
                         "install it (see this script's docstring) or give its interpreter with --python")
    return json.loads(out.stdout.strip().splitlines()[-1])


def chemprop_main(python: str) -> list[str]:
    """``chemprop`` (the CLI's entry point) run by ``python``."""
    return [python, "-c", "import sys; from chemprop.cli.main import main; sys.argv[0] = 'chemprop'; main()"]


def best_epoch(model_dir: Path) -> int | None:
    """The epoch of Chemprop's best checkpoint (``best-epoch=E-val_loss=...ckpt``)."""
    found = [int(m.group(1)) for p in (model_dir / "checkpoints").glob("best-epoch=*.ckpt")
             if (m := re.match(r"best-epoch=(\d+)-", p.name))]
    return max(found) if found else None


def predictions(path: Path) -> list[float]:
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        col = header.index("target")
        return [float(r[col]) for r in reader]


def scores(task: str, split: str, pred: list[float], rows: list[dict]) -> dict:
    """vecset's metrics of ``pred`` against ``rows``' targets: ``<split>_rmse``, or ``<split>_auc``
    (ROC-AUC of P(class 1)) with PR-AUC and accuracy at 0.5."""
    import numpy as np
    import torch

    from vecset.pipelines.molecules.data import rmse
    from vecset.pipelines.reports.binary import binary_scores

    true = [r["target"] for r in rows]
    if task == "regression":
        return {f"{split}_rmse": rmse(np.array(pred), np.array(true))}
    s = binary_scores(torch.tensor(pred, dtype=torch.float32), torch.tensor(true))
    return {f"{split}_auc": s["roc_auc"], f"{split}_pr_auc": s["pr_auc"], f"{split}_accuracy": s["accuracy"]}


def run_one(name: str, split_seed: int, seed: int, python: str, work: Path, epochs: int,
            accelerator: str, dry: bool) -> dict:
    """Chemprop trained and scored on one vecset split: the row."""
    task = SETS[name]["task"]
    dm = data_module(name, split_seed)
    rows = split_rows(dm)
    if dry:  # the first molecules of each part
        rows = [r for k, n in DRY_SIZES.items() for r in [r for r in rows if r["split"] == k][:n]]
    run_dir = work / f"{name}_split{split_seed}_seed{seed}"
    data, valtest = run_dir / "data.csv", run_dir / "val_test.csv"
    write_csv(rows, data)
    held = [r for r in rows if r["split"] in ("val", "test")]
    write_csv(held, valtest, ("smiles",))
    cmd = [*chemprop_main(python), "train", "--data-path", str(data), "--smiles-columns", "smiles",
           "--target-columns", "target", "--splits-column", "split", "-t", task,
           "--data-seed", str(seed), "--pytorch-seed", str(seed), "-o", str(run_dir / "train"),
           "--accelerator", accelerator, "--devices", "1"]
    cmd += ["--epochs", str(epochs)]
    if dry:  # Chemprop needs more epochs than warmup epochs (2 by default)
        cmd += ["--warmup-epochs", "1"]
    secs = run_logged(cmd, run_dir / "train.log")
    model_dir = run_dir / "train" / "model_0"
    pred_cmd = [*chemprop_main(python), "predict", "-i", str(valtest), "--smiles-columns", "smiles",
                "--model-paths", str(model_dir / "best.pt"), "-o", str(run_dir / "val_test_preds.csv"),
                "--accelerator", accelerator, "--devices", "1"]
    run_logged(pred_cmd, run_dir / "predict.log")
    pred = predictions(run_dir / "val_test_preds.csv")
    if len(pred) != len(held):
        raise RuntimeError(f"{run_dir / 'val_test_preds.csv'}: {len(pred)} predictions for {len(held)} molecules")
    n_val = sum(r["split"] == "val" for r in held)
    # Chemprop's own test predictions (its trainer's best checkpoint) must be the same model's
    own = predictions(model_dir / "test_predictions.csv")
    same = max((abs(a - b) for a, b in zip(own, pred[n_val:], strict=True)), default=0.0)
    counts = {k: sum(r["split"] == k for r in rows) for k in ("train", "val", "test")}
    return {"set": name, "split": split_seed, "seed": seed, **scores(task, "val", pred[:n_val], held[:n_val]),
            **scores(task, "test", pred[n_val:], held[n_val:]), "train_seconds": round(secs, 1),
            "best_epoch": best_epoch(model_dir), "epochs": epochs, "n": counts,
            "skipped_rows": len(dm.skipped), "max_abs_diff_vs_chemprop_test_predictions": same,
            "run_dir": shown(run_dir)}


def shown(path: Path | str) -> str:
    """``path`` relative to the repository where it is inside it."""
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def summary(rows: list[dict], default_epochs: int = 50) -> dict:
    """Per set (and per epoch count other than Chemprop's default: ``b3db, 15 epochs``): mean,
    standard error (sample std / sqrt(n)) and sample std of each val/test metric and of the
    training seconds."""
    def group(r: dict) -> str:
        epochs = r.get("epochs", default_epochs)
        return r["set"] if epochs == default_epochs else f"{r['set']}, {epochs} epochs"

    out: dict = {}
    for name in dict.fromkeys(map(group, rows)):
        mine = [r for r in rows if group(r) == name]
        keys = [k for k in mine[0] if k.startswith(("val_", "test_")) or k == "train_seconds"]
        out[name] = {"rows": len(mine)}
        for k in keys:
            vals = [r[k] for r in mine if r[k] is not None]
            std = statistics.stdev(vals) if len(vals) > 1 else None
            out[name][k] = {"mean": statistics.fmean(vals), "se": std / math.sqrt(len(vals)) if std is not None else None,
                            "std": std}
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    ap.add_argument("--splits", nargs="+", type=int, default=None,
                    help="split seeds (default: FreeSolv 0-4, solubility and B3DB 0)")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0], help="Chemprop's --data-seed and --pytorch-seed")
    ap.add_argument("--epochs", type=int, default=None, help="Chemprop's --epochs (default: its own, 50)")
    ap.add_argument("--b3db-epochs", type=int, default=None, help="--epochs for B3DB alone (its runs are long)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that has chemprop 2.x")
    ap.add_argument("--accelerator", default="cpu", help="Lightning's accelerator for Chemprop")
    ap.add_argument("--work", default=None, help="Chemprop's files (default runs/chemprop_baseline, --dry: /tmp)")
    ap.add_argument("--note", default="", help="added to the results' notes (e.g. how the machine was loaded)")
    ap.add_argument("--dry", action="store_true", help="40 FreeSolv molecules of split 0, 2 epochs")
    ap.add_argument("--out", default=None, help="default bench/results/chemprop_baseline.json (--dry: /tmp)")
    args = ap.parse_args(argv)

    if args.dry:
        args.sets, args.splits, args.seeds, args.epochs = ["freesolv"], [0], [0], 2
    tmp = Path("/tmp/chemprop_baseline_dry")
    out = Path(args.out or (tmp / "chemprop_baseline.json" if args.dry
                            else ROOT / "bench" / "results" / "chemprop_baseline.json"))
    work = Path(args.work or (tmp / "runs" if args.dry else ROOT / "runs" / "chemprop_baseline"))
    info = chemprop_settings(args.python)
    old = json.loads(out.read_text()) if out.exists() else {}
    default_epochs = info["defaults"]["epochs"]
    kept = [r for r in old.get("rows", []) if old.get("chemprop_version") == info["chemprop_version"]]
    for r in kept:  # the epochs a row trained (Chemprop's default where none was given)
        r["epochs"] = r["epochs"] if r["epochs"] is not None else default_epochs
        r["run_dir"] = shown(r["run_dir"])
    command = "python bench/chemprop_baseline.py " + " ".join(argv if argv is not None else sys.argv[1:])
    # the invocations that wrote the kept rows, and their notes
    earlier = [*old.get("earlier_commands", []), old["command"]] if kept else []
    old_notes = old.get("notes", []) if kept else []
    notes = [n for n in [*([old_notes] if isinstance(old_notes, str) else old_notes), args.note] if n]
    result = {"command": command, "earlier_commands": earlier,
              "chemprop_version": info["chemprop_version"],
              "settings": {"defaults": info["defaults"], "accelerator": args.accelerator,
                           "threads": 1, "seeds": "--data-seed and --pytorch-seed = the row's seed",
                           "checkpoint": "Chemprop's best validation loss (its default tracking metric)",
                           "dry": args.dry},
              "notes": list(dict.fromkeys(notes)), "rows": kept}
    out.parent.mkdir(parents=True, exist_ok=True)
    for name in args.sets:
        given = args.b3db_epochs if (name == "b3db" and args.b3db_epochs is not None) else args.epochs
        epochs = given if given is not None else default_epochs
        for split_seed in (args.splits if args.splits is not None else SETS[name]["splits"]):
            for seed in args.seeds:
                key = (name, split_seed, seed, epochs)
                if any((r["set"], r["split"], r["seed"], r["epochs"]) == key for r in result["rows"]):
                    continue
                row = run_one(name, split_seed, seed, args.python, work, epochs, args.accelerator, args.dry)
                result["rows"].append(row)
                result["summary"] = summary(result["rows"], default_epochs)
                out.write_text(json.dumps(result, indent=2) + "\n")
                print(json.dumps({k: v for k, v in row.items() if k != "run_dir"}), flush=True)
    result["summary"] = summary(result["rows"], default_epochs)
    out.write_text(json.dumps(result, indent=2) + "\n")

    print(f"\nChemprop {result['chemprop_version']} on vecset's splits")
    print(f"{'set':<11} {'split':>5} {'seed':>4} {'val':>8} {'test':>8} {'epoch':>5} {'train s':>8}")
    for r in result["rows"]:
        m = "rmse" if "test_rmse" in r else "auc"
        print(f"{r['set']:<11} {r['split']:>5} {r['seed']:>4} {r['val_' + m]:>8.3f} {r['test_' + m]:>8.3f} "
              f"{str(r['best_epoch']):>5} {r['train_seconds']:>8.1f}")
    for name, s in result["summary"].items():
        m = "test_rmse" if "test_rmse" in s else "test_auc"
        se = s[m]["se"]
        print(f"{name:<11} test {m[5:]} {s[m]['mean']:.3f}" + (f" +- {se:.3f} (s.e.)" if se is not None else "")
              + f" over {s['rows']} run(s)")
    print(f"results: {out}")
    return result


if __name__ == "__main__":
    main()
