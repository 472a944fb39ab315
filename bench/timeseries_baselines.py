"""Time-series baselines on the splits of configs/timeseries.yaml (UCI Japanese Vowels).

scikit-learn on summary features of each series (per channel: mean, standard deviation, min,
max, first and last value; and the length: 73 numbers), standardized: a logistic regression
and a k-nearest-neighbours classifier, each setting chosen on the validation split (the 20%
of the training series that TimeSeriesDataModule holds out, ``split_seed`` 0), refitted on the
training series alone (as the vecset model sees them) and scored once on the test split.
Prints a table and writes ``bench/results/timeseries_baselines.json``.

    python bench/timeseries_baselines.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vecset.pipelines.timeseries.data import TimeSeriesDataModule  # noqa: E402


def summary(x: np.ndarray) -> np.ndarray:
    """(T, C) -> (6 C + 1,) summary features."""
    return np.concatenate([x.mean(0), x.std(0), x.min(0), x.max(0), x[0], x[-1], [len(x)]])


def features(items: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    return np.stack([summary(it["x"].numpy()) for it in items]), np.array([it["y"] for it in items])


def main() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    data = TimeSeriesDataModule(val_fraction=0.2, split_seed=0)
    data.setup("fit")
    (Xtr, ytr), (Xva, yva), (Xte, yte) = (features(data.splits[s]) for s in ("train", "val", "test"))
    grids = {
        "LogisticRegression (C on val)": [("C", c, lambda c: LogisticRegression(C=c, max_iter=5000))
                                          for c in (0.01, 0.1, 1.0, 10.0, 100.0)],
        "KNeighborsClassifier (k on val)": [("k", k, lambda k: KNeighborsClassifier(k)) for k in (1, 3, 5, 9)],
    }
    rows = []
    for name, grid in grids.items():
        scored = []
        for key, value, make in grid:
            model = make_pipeline(StandardScaler(), make(value)).fit(Xtr, ytr)
            scored.append((float((model.predict(Xva) == yva).mean()), key, value))
        best_val, key, value = max(scored, key=lambda s: s[0])  # the first best: the smallest C / k
        make = next(m for k, v, m in grid if v == value)
        t0 = time.perf_counter()
        model = make_pipeline(StandardScaler(), make(value)).fit(Xtr, ytr)
        secs = time.perf_counter() - t0
        rows.append({"model": name, "chosen": {key: value}, "val_acc": {f"{key}={v}": a for a, k, v in scored},
                     "best_val_acc": best_val, "test_acc": float((model.predict(Xte) == yte).mean()),
                     "train_seconds": round(secs, 3)})
    out = {"data": "data/japanese_vowels (UCI Japanese Vowels): 216 train, 54 val (20% of train, stratified, "
                   "seed 0), 370 test (the published split)",
           "features": "per channel mean, std, min, max, first, last; length (73), standardized",
           "command": "python bench/timeseries_baselines.py",
           "rows": rows}
    for r in rows:
        print(f"{r['model']:36s} {r['chosen']}  val {r['best_val_acc']:.3f}  test {r['test_acc']:.3f}")
    path = ROOT / "bench" / "results" / "timeseries_baselines.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(path)


if __name__ == "__main__":
    main()
