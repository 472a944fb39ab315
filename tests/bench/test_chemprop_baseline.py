"""bench/chemprop_baseline.py (issue #47): Chemprop trains on vecset's own splits (the molecules
the shipped config's data module puts in train / val / test), and a ``--dry`` run through
Chemprop writes a scored row (skipped where chemprop is not importable)."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import chemprop_baseline as cb  # noqa: E402
from vecset.pipelines.cli import run_cli  # noqa: E402
from vecset.pipelines.molecules.splits import random_split  # noqa: E402

# an interpreter with chemprop 2.x: $CHEMPROP_PYTHON, else this one where it has chemprop
CHEMPROP_PYTHON = os.environ.get("CHEMPROP_PYTHON") or (
    sys.executable if importlib.util.find_spec("chemprop") is not None else None)


def lines_by_split(rows: list[dict]) -> dict[str, list[int]]:
    return {k: sorted(r["line"] for r in rows if r["split"] == k) for k in ("train", "val", "test")}


def test_freesolv_split_0_is_the_data_modules_and_the_published_permutation(tmp_path, monkeypatch):
    rows = cb.split_rows(cb.data_module("freesolv", 0))
    got = lines_by_split(rows)
    # the data module `vecset fit --config configs/freesolv.yaml` builds, set up on its own
    monkeypatch.chdir(ROOT)
    # (its 3-D conformers and the surface measured on them play no part in the split: left out, seconds faster)
    dm = run_cli(["--config", "configs/freesolv.yaml", "--trainer.enable_progress_bar=false",
                  "--data.init_args.features.geometry=false", "--data.init_args.features.surface=false",
                  "--model.init_args.encoder.init_args.geometry=none"],
                 run=False).datamodule
    dm.setup("fit")
    assert got == {k: sorted(it["line"] for it in dm.splits[k]) for k in ("train", "val", "test")}
    # default_rng(0).permutation(642) over the file's data rows (line 2 is the first), 513/64/65
    with open(ROOT / "data/molecules/freesolv.csv", newline="") as f:
        table = list(csv.DictReader(f))
    idx = random_split(len(table), 0)
    assert got == {k: sorted(int(i) + 2 for i in v) for k, v in idx.items()}
    assert [len(v) for v in got.values()] == [513, 64, 65]
    # each row carries that line's SMILES and target
    for r in rows[:5] + rows[-5:]:
        src = table[r["line"] - 2]
        assert (r["smiles"], r["target"]) == (src["smiles"], pytest.approx(float(src["expt"])))
    cb.write_csv(rows, tmp_path / "data.csv")
    with open(tmp_path / "data.csv", newline="") as f:
        written = list(csv.DictReader(f))
    assert [w["split"] for w in written] == [r["split"] for r in rows] and written[0].keys() == {"smiles", "target", "split"}


def test_summary_is_the_mean_and_standard_error_per_set_and_epoch_count():
    rows = [{"set": "freesolv", "val_rmse": 1.0, "test_rmse": 1.0, "train_seconds": 10.0},
            {"set": "freesolv", "val_rmse": 2.0, "test_rmse": 3.0, "train_seconds": 20.0},
            {"set": "b3db", "val_auc": 0.8, "test_auc": 0.9, "train_seconds": 5.0},
            {"set": "b3db", "epochs": 15, "val_auc": 0.7, "test_auc": 0.6, "train_seconds": 2.0}]
    s = cb.summary(rows, default_epochs=50)
    assert list(s) == ["freesolv", "b3db", "b3db, 15 epochs"] and s["b3db, 15 epochs"]["test_auc"]["mean"] == 0.6
    assert s["freesolv"]["test_rmse"] == {"mean": 2.0, "se": pytest.approx(1.0), "std": pytest.approx(math.sqrt(2))}
    assert s["freesolv"]["train_seconds"]["mean"] == 15.0 and s["freesolv"]["rows"] == 2
    assert s["b3db"]["test_auc"] == {"mean": 0.9, "se": None, "std": None} and s["b3db"]["rows"] == 1


@pytest.mark.skipif(CHEMPROP_PYTHON is None, reason="chemprop is not importable (set CHEMPROP_PYTHON to its interpreter)")
def test_dry_run_trains_chemprop_on_40_molecules_writes_a_scored_row_and_resumes(tmp_path, monkeypatch):
    out = tmp_path / "chemprop.json"
    argv = ["--dry", "--python", CHEMPROP_PYTHON, "--out", str(out), "--work", str(tmp_path / "runs")]
    result = cb.main(argv)
    saved = json.loads(out.read_text())
    assert saved["rows"] == result["rows"] and saved["chemprop_version"].startswith("2.")
    (row,) = saved["rows"]
    assert (row["set"], row["split"], row["seed"], row["epochs"]) == ("freesolv", 0, 0, 2)
    assert row["n"] == {"train": 32, "val": 4, "test": 4} and row["skipped_rows"] == 0
    assert math.isfinite(row["val_rmse"]) and math.isfinite(row["test_rmse"]) and row["best_epoch"] in (0, 1)
    # best.pt's test predictions are Chemprop's own (its trainer's best checkpoint)
    assert row["max_abs_diff_vs_chemprop_test_predictions"] < 1e-4
    assert saved["settings"]["defaults"]["depth"] == [3] and saved["summary"]["freesolv, 2 epochs"]["rows"] == 1
    with open(Path(row["run_dir"]) / "data.csv", newline="") as f:
        assert sum(1 for _ in f) == 41  # header + 40 molecules

    def no_run(*a, **k):
        raise AssertionError("a finished row was run again")

    monkeypatch.setattr(cb, "run_one", no_run)
    again = cb.main(argv)
    assert again["rows"] == saved["rows"] and again["earlier_commands"] == [saved["command"]]
