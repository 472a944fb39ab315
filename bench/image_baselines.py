"""Fashion-MNIST on one split: scikit-learn baselines against self-attention and a CNN at one budget.

The split is ``FashionMNISTDataModule``'s (54,000 training images, 6,000 validation images
taken from the official training set, stratified, seed 0; the official 10,000 test images).
Every model trains on the same training images and is scored on the same test images:

- scikit-learn baselines from the dataset's own benchmark family (its ``benchmark/runner.py``
  and ``baselines.json``: pixels standardized with ``StandardScaler``): ``LogisticRegression()``
  and ``MLPClassifier(hidden_layer_sizes=(100,))`` with default settings;
- ``configs/fashion_mnist_patches.yaml`` (patch self-attention) and ``configs/fashion_mnist_cnn.yaml``
  (a small ResNet in the backbone's slot) through ``vecset fit``, one after the other, each
  with ``trainer.max_time`` at the budget (default 30 minutes), its best checkpoint by
  validation accuracy tested.

The cosine schedule runs over ``max_epochs``, so each run's epochs are sized to the budget on
this machine: the step time of each config is measured first, in the precision the run trains
in (``bench/training.py``'s ``bench_job``, 20 steps), an epoch is its training batches plus a third of a step per
validation batch, and ``max_epochs`` = 90% of the budget over that, at least 1 (``--epochs``
gives them instead). ``max_time`` still stops a run that is slower than measured.

Prints one table (test accuracy, train seconds, CPU seconds, parameters), writes
``bench/results/image_baselines.json`` and ``bench/results/image_baselines_minutes.png``:
validation accuracy against minutes of training for both vecset runs (their ``metrics.csv``,
the ``elapsed_min`` the configs' ``ElapsedTime`` callback logs).

    python bench/image_baselines.py                         # sklearn + 2 x 30 minutes (about 70 min)
    python bench/image_baselines.py --budget-minutes 10     # both runs at 10 minutes
    python bench/image_baselines.py --runs runs/fashion_mnist/version_0 runs/fashion_mnist_cnn/version_0
                                                            # reuse finished runs (their results.json)
    python bench/image_baselines.py --sklearn-only
    python bench/image_baselines.py --quick                 # end to end in minutes: subsets, 1-minute runs

``--quick`` uses stratified subsets (2,000 training, 500 validation, 1,000 test images), 1
minute, 1 epoch and 20 iterations for scikit-learn: it checks that the script works; its
numbers are not the benchmark's: its JSON and plot go to ``bench/results/tmp/`` (ignored by git).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.common import RESULTS, fit_in_child, machine, table, write_json  # noqa: E402

CONFIGS = {"self-attention (configs/fashion_mnist_patches.yaml)": "configs/fashion_mnist_patches.yaml",
           "CNN: GridResNet (configs/fashion_mnist_cnn.yaml)": "configs/fashion_mnist_cnn.yaml"}
QUICK = {"max_train": 2000, "max_val": 500, "max_test": 1000}
COLS = ["model", "test_acc", "train_seconds", "cpu_seconds", "parameters", "epochs", "precision", "train_images",
        "test_images"]


def split_arrays(root: str, subsets: dict) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The data module's train and test images as (N, 784) float pixels in [0, 1] and labels."""
    from vecset.pipelines.images.fashion_mnist import FashionMNISTDataModule

    dm = FashionMNISTDataModule(root=root, augment=False, **subsets)
    dm.setup("fit")
    return {s: (dm.sets[s].images.reshape(len(dm.sets[s]), -1).numpy() / 255.0, dm.sets[s].labels.numpy())
            for s in ("train", "test")}


def sklearn_rows(root: str, subsets: dict, quick: bool) -> list[dict]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    data = split_arrays(root, subsets)
    (xtr, ytr), (xte, yte) = data["train"], data["test"]
    iters = {"max_iter": 20} if quick else {}  # quick: a check that the script runs, not a result
    models = {
        "LogisticRegression() on standardized pixels": LogisticRegression(**iters),
        "MLPClassifier((100,), random_state=0) on standardized pixels":
            MLPClassifier(hidden_layer_sizes=(100,), random_state=0, **iters),
    }
    rows = []
    for name, clf in models.items():
        model = make_pipeline(StandardScaler(), clf)
        before = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        model.fit(xtr, ytr)
        secs = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_SELF)
        est = model[-1]
        params = (est.coef_.size + est.intercept_.size if hasattr(est, "coef_")
                  else sum(w.size for w in est.coefs_) + sum(b.size for b in est.intercepts_))
        rows.append({"model": name, "test_acc": float((model.predict(xte) == yte).mean()),
                     "train_seconds": round(secs, 1),
                     "cpu_seconds": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 1),
                     "parameters": int(params), "train_images": len(ytr), "test_images": len(yte)})
        print(f"{name}: test accuracy {rows[-1]['test_acc']:.4f} in {secs:.0f} s", flush=True)
    return rows


def data_args(root: str, subsets: dict) -> list[str]:
    args = ["--data.init_args.root", root]
    for k, v in subsets.items():
        args += [f"--data.init_args.{k}", str(v)]
    return args


def budget_epochs(config: str, data: list[str], budget_minutes: float) -> tuple[int, dict]:
    """Epochs of ``config`` that fill 90% of the budget on this machine, from a measured step
    time (and the measurement)."""
    from bench.training import bench_job

    m = bench_job(ROOT / config, steps=20, warmup=3, args=data)
    if "error" in m:
        raise SystemExit(f"measuring {config}: {m['error']}")
    import yaml

    init = yaml.safe_load((ROOT / config).read_text())["data"]["init_args"]
    val_batches = -(-int(init.get("max_val") or 6000) // int(init.get("batch_size", 128)))
    epoch_s = m["step_s"] * (m["train_batches"] + val_batches / 3)  # an eval step: about a third of a training one
    return max(1, int(0.9 * budget_minutes * 60 / epoch_s)), {"step_s": m["step_s"], "epoch_s_estimate": epoch_s,
                                                              "data_wait_share": m["data_wait_share"]}


def fit_args(data: list[str], budget_minutes: float, epochs: int) -> list[str]:
    """``vecset fit`` arguments: the data, the budget as max_time, the epochs."""
    secs = int(round(budget_minutes * 60))
    return [*data, "--trainer.max_epochs", str(epochs),
            "--trainer.max_time", f"00:{secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}",
            "--trainer.enable_progress_bar", "false"]


def trainable_parameters(checkpoint: str) -> int:
    from vecset.pipelines.training.task import TaskModule

    model = TaskModule.load_from_checkpoint(checkpoint, map_location="cpu")
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def vecset_row(name: str, run_dir: Path, cpu_seconds: float | None) -> dict:
    import yaml

    res = json.loads((run_dir / "results.json").read_text())
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    data = config["data"]["init_args"]
    return {"model": name, "test_acc": res["test"]["test_acc"], "train_seconds": res["wall_seconds"],
            "cpu_seconds": cpu_seconds, "parameters": trainable_parameters(res["checkpoint"]),
            "epochs": res["epochs"], "best_val_acc": res["best_val"], "run": str(run_dir),
            "max_time": config["trainer"]["max_time"], "precision": res.get("precision", "32-true"),
            "train_images": data.get("max_train") or 54000, "test_images": data.get("max_test") or 10000}


def val_curve(run_dir: Path) -> tuple[list[float], list[float]]:
    """(minutes, validation accuracy) at each validation of a run, from its metrics.csv."""
    import pandas as pd

    path = run_dir / "metrics.csv"
    df = pd.read_csv(path)
    if "elapsed_min" not in df:
        raise SystemExit(f"{path} has no elapsed_min column: train with the ElapsedTime callback "
                         "(vecset.pipelines.ElapsedTime, in the configs' trainer.callbacks)")
    rows = df.dropna(subset=["elapsed_min", "val_acc"])
    return rows["elapsed_min"].tolist(), rows["val_acc"].tolist()


def plot_minutes(runs: dict[str, Path], out: Path, budget: float) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, run_dir in runs.items():
        minutes, acc = val_curve(run_dir)
        ax.plot(minutes, acc, marker="o", ms=3, label=name)
    ax.axvline(budget, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("minutes of training (validation included)")
    ax.set_ylabel("validation accuracy")
    ax.set_title(f"Fashion-MNIST, {budget:g}-minute budget", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="/usr/share/datasets/fashion-mnist", help="folder of the four idx files")
    ap.add_argument("--budget-minutes", type=float, default=30.0, help="training time of each vecset run")
    ap.add_argument("--runs", nargs=2, metavar=("ATTENTION_RUN", "CNN_RUN"),
                    help="finished run directories to read instead of training")
    ap.add_argument("--cpu", nargs=2, type=float, metavar=("ATTENTION_CPU", "CNN_CPU"),
                    help="with --runs: CPU seconds measured for those runs")
    ap.add_argument("--epochs", nargs=2, type=int, metavar=("ATTENTION_EPOCHS", "CNN_EPOCHS"),
                    help="max_epochs of the two runs instead of sizing them to the budget")
    ap.add_argument("--sklearn-only", action="store_true")
    ap.add_argument("--quick", action="store_true", help="subsets, 1 minute, 1 epoch: checks the script end to end")
    ap.add_argument("--out", default=None, help="JSON path (default bench/results/image_baselines[_quick].json)")
    args = ap.parse_args()
    budget = 1.0 if args.quick and args.budget_minutes == 30.0 else args.budget_minutes
    subsets = QUICK if args.quick else {}

    rows = sklearn_rows(args.root, subsets, args.quick)
    runs: dict[str, Path] = {}
    sizing: dict[str, dict] = {}
    if not args.sklearn_only:
        data = data_args(args.root, subsets)
        for i, (name, cfg) in enumerate(CONFIGS.items()):
            if args.runs:
                run_dir, cpu = Path(args.runs[i]), (args.cpu or [None, None])[i]
            else:
                if args.quick or args.epochs:
                    epochs, sizing[name] = (1 if args.quick else args.epochs[i]), {"given": True}
                else:
                    epochs, sizing[name] = budget_epochs(cfg, data, budget)
                print(f"{name}: {epochs} epoch(s) for {budget:g} minutes {sizing[name]}", flush=True)
                run_dir, cpu = fit_in_child(cfg, fit_args(data, budget, epochs))
            runs[name] = run_dir
            rows.append(vecset_row(name, run_dir, cpu))
    print(table(rows, COLS))
    # a quick run checks the script: its files go to bench/results/tmp/ (not committed)
    stem = "tmp/image_baselines_quick" if args.quick else "image_baselines"
    (RESULTS / stem).parent.mkdir(parents=True, exist_ok=True)
    payload = {"split": "FashionMNISTDataModule: val 10% of the official training set (stratified, seed 0), "
                        "the official test set" + (f"; quick subsets {subsets}" if subsets else ""),
               "budget_minutes": budget, "quick": args.quick, "epoch_sizing": sizing,
               "machine_note": f"{os.cpu_count()} CPU cores; record whether other jobs shared them", "rows": rows}
    out = Path(args.out) if args.out else RESULTS / f"{stem}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if runs:
        plot = out.with_name(f"{out.stem}_minutes.png")
        payload["minutes_plot"] = str(plot_minutes(runs, plot, budget).resolve().relative_to(ROOT))
        payload["val_curves"] = {name: dict(zip(("minutes", "val_acc"), val_curve(d), strict=True))
                                 for name, d in runs.items()}
    if args.out:
        out.write_text(json.dumps({"machine": machine(), "command": "python " + " ".join(sys.argv), **payload}, indent=2))
    else:
        out = write_json(stem, payload)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
