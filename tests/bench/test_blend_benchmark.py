"""bench/molecule_blend.py (issue #58): the blend's weight from validation alone, each family's
pick on validation, and the pairing (per split over several, per vecset seed with one)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import molecule_blend as mb  # noqa: E402


def test_the_blend_reads_the_test_at_the_validation_weight():
    y_val, y_test = np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0])
    a = (y_val + np.array([1.0, -1.0, 1.0]), y_test + 10.0)  # the test errors differ: not read to choose
    b = (y_val - np.array([1.0, -1.0, 1.0]), y_test)
    out = mb.blend(a, b, y_val, y_test, classification=False)
    assert out["w"] == 0.5 and out["val"] == pytest.approx(0.0) and out["test"] == pytest.approx(5.0)


def rows_of(table: dict[str, list[tuple[int, int | None, float, float]]]) -> list[dict]:
    return [{"candidate": c, "split": s, "seed": seed, "val": v, "test": t}
            for c, entries in table.items() for s, seed, v, t in entries]


def test_each_family_is_picked_on_validation_and_paired_per_split():
    rows = rows_of({
        "svr": [(0, None, 0.80, 0.90), (1, None, 0.90, 1.00)],
        "hgb": [(0, None, 0.85, 0.70), (1, None, 0.95, 0.70)],  # best on test, not on validation
        "svr+hgb": [(0, None, 0.78, 0.88), (1, None, 0.88, 0.98)],
        "vecset": [(0, 0, 0.9, 1.0), (0, 1, 0.9, 0.9), (1, 0, 0.9, 1.0), (1, 1, 0.9, 1.0)],
        "vecset+svr": [(0, 0, 0.7, 0.80), (0, 1, 0.7, 0.84), (1, 0, 0.8, 0.90), (1, 1, 0.8, 0.94)],
        "vecset+hgb": [(0, 0, 0.75, 0.5), (0, 1, 0.75, 0.5), (1, 0, 0.85, 0.5), (1, 1, 0.85, 0.5)],
    })
    out = mb.summary(rows, lower=True)
    assert out["picks"] == {"peer": "svr", "peer pair": "svr+hgb", "vecset": "vecset", "vecset+peer": "vecset+svr"}
    p = out["paired"]["vecset+peer"]["peer"]
    # per split: vecset+svr's seeds averaged (0.82, 0.92) against svr's (0.90, 1.00)
    assert p["unit"] == "split" and p["n"] == 2 and p["diffs"] == pytest.approx([-0.08, -0.08])
    assert p["difference"] == pytest.approx(-0.08) and p["se"] == pytest.approx(0.0)


def test_one_split_pairs_each_vecset_seed_and_higher_is_better_for_roc_auc():
    rows = rows_of({
        "hgb": [(0, None, 0.90, 0.918)], "forest": [(0, None, 0.89, 0.921)],
        "hgb+forest": [(0, None, 0.905, 0.920)],
        "vecset+hgb": [(0, 0, 0.91, 0.922), (0, 1, 0.91, 0.924), (0, 2, 0.91, 0.926)],
    })
    out = mb.summary(rows, lower=False)
    assert out["picks"]["peer"] == "hgb"  # the higher validation ROC-AUC
    p = out["paired"]["vecset+peer"]["peer"]
    assert p["unit"] == "seed" and p["diffs"] == pytest.approx([0.004, 0.006, 0.008])
    assert p["se"] == pytest.approx(0.002 / np.sqrt(3))


def test_a_run_spec_names_split_seed_and_folder(tmp_path):
    import argparse

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.json").write_text("{}")
    args = argparse.Namespace(runs=None, run=[f"1:2={tmp_path / 'run'}"], seeds=[0])
    assert mb.parse_runs(args, [0]) == {1: {2: tmp_path / "run"}}
    with pytest.raises(SystemExit, match="expected SPLIT:SEED=RUN_DIR"):
        mb.parse_runs(argparse.Namespace(runs=None, run=["nope"], seeds=[0]), [0])
    with pytest.raises(SystemExit, match="has no results.json"):
        mb.parse_runs(argparse.Namespace(runs=None, run=[f"0:0={tmp_path}"], seeds=[0]), [0])
