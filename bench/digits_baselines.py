"""Digits baselines on the pinned split (vecset.pipelines.images.digits.digits_split).

scikit-learn's SVC() with default settings, KNeighborsClassifier(3) and an MLPClassifier
on the 64 raw pixel values (the usual scikit-learn recipe: pixels / 16), against vecset's
models trained from their configs (``vecset fit``): the CCT of ``digits.yaml``, the same model
with 2x2 patches instead of its convolutional tokenizer (``PATCH``), and the pixel model.
Prints one table (validation and test accuracy, train seconds) and writes
``bench/results/digits_baselines.json``.

    python bench/digits_baselines.py                  # trains the three vecset models (~3 x 10 min)
    python bench/digits_baselines.py --runs runs/digits/version_3 runs/digits/version_4 runs/digits_pixel/version_2
                                      [--cpu 410 400 579]   # reuse finished runs (their results.json)
    python bench/digits_baselines.py --sklearn-only

Train seconds of the vecset models are their ``results.json`` ``wall_seconds`` (fit only,
not the final test pass); CPU seconds (user + system of the whole ``vecset fit`` process)
are given when this script ran the training itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import fit_in_child  # noqa: E402
from vecset.pipelines.images.digits import digits_split  # noqa: E402

# digits.yaml with 2x2 patches for its convolutional tokenizer and no stochastic depth
PATCH = ["--model.init_args.encoder",
         "{class_path: vecset.encoders.PatchEncoder, init_args: {patch_size: 2, positional: sinusoidal}}",
         "--model.init_args.backbone.init_args.drop_path", "0"]
# the row's name -> (config, more vecset fit arguments)
CONFIGS = {"vecset CCT (configs/digits.yaml)": ("configs/digits.yaml", []),
           "vecset patch (digits.yaml, 2x2 patches)": ("configs/digits.yaml", PATCH),
           "vecset pixel (configs/digits_pixel.yaml)": ("configs/digits_pixel.yaml", [])}


def sklearn_rows() -> list[dict]:
    from sklearn.datasets import load_digits
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC

    X, y = load_digits(return_X_y=True)
    split = digits_split(y)
    # validation images join training here: the baselines have no early stopping to feed
    tr = np.concatenate([split["train"], split["val"]])
    te = split["test"]
    models = {
        "SVC() defaults": SVC(),
        "KNeighborsClassifier(3)": KNeighborsClassifier(3),
        "MLPClassifier(max_iter=1000, random_state=0)": MLPClassifier(max_iter=1000, random_state=0),
    }
    rows = []
    for name, m in models.items():
        t0 = time.perf_counter()
        m.fit(X[tr] / 16.0, y[tr])
        secs = time.perf_counter() - t0
        acc = float((m.predict(X[te] / 16.0) == y[te]).mean())
        rows.append({"model": name, "test_acc": acc, "train_seconds": round(secs, 3), "cpu_seconds": None,
                     "train_images": int(len(tr)), "test_images": int(len(te))})
    return rows


def vecset_row(name: str, run_dir: Path, cpu_seconds: float | None, args: list[str]) -> dict:
    res = json.loads((run_dir / "results.json").read_text())
    return {"model": name, "val_acc": res["best_val"], "test_acc": res["test"]["test_acc"],
            "args": args, "train_seconds": res["wall_seconds"],
            "cpu_seconds": cpu_seconds, "epochs": res["epochs"], "run": str(run_dir),
            "train_images": 1293, "test_images": 360}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", nargs=3, metavar=("CCT_RUN", "PATCH_RUN", "PIXEL_RUN"),
                    help="finished run directories (CCT, patch, pixel) to read instead of training")
    ap.add_argument("--cpu", nargs=3, type=float, metavar=("CCT_CPU", "PATCH_CPU", "PIXEL_CPU"),
                    help="with --runs: CPU seconds measured for those runs (e.g. /usr/bin/time -v)")
    ap.add_argument("--sklearn-only", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "digits_baselines.json"))
    args = ap.parse_args()

    rows = sklearn_rows()
    if not args.sklearn_only:
        cpus = args.cpu or [None] * len(CONFIGS)
        for (name, (cfg, more)), given, cpu in zip(CONFIGS.items(), args.runs or [None] * len(CONFIGS), cpus,
                                                   strict=True):
            if given:
                rows.append(vecset_row(name, Path(given), cpu, more))
            else:
                run_dir, cpu = fit_in_child(cfg, more)
                rows.append(vecset_row(name, run_dir, cpu, more))

    print(f"{'model':<46} {'val acc':>8} {'test acc':>9} {'train s':>9} {'cpu s':>8}")
    for r in rows:
        cpu = f"{r['cpu_seconds']:.0f}" if r["cpu_seconds"] is not None else "-"
        val = f"{r['val_acc']:.4f}" if r.get("val_acc") is not None else "-"
        print(f"{r['model']:<46} {val:>8} {r['test_acc']:>9.4f} {r['train_seconds']:>9.1f} {cpu:>8}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"split": "digits_split: test 20% stratified rs=0, val 10% of rest rs=0",
                               "machine": f"{os.cpu_count()} CPU cores, shared with other jobs",
                               "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
