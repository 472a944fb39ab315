"""bench/molecule_peers.py (issue #58): the grid's pick by validation alone, the non-constant
descriptor columns, the best peer on validation, and the pairing of vecset's rows with a peer's
(per split over several splits, per seed with one)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import molecule_peers as mp  # noqa: E402


def test_grid_points_cover_every_combination_in_order():
    points = mp.grid_points({"a": [1, 2], "b": ["x", "y", "z"]})
    assert len(points) == 6 and points[0] == {"a": 1, "b": "x"} and points[-1] == {"a": 2, "b": "z"}
    # B3DB's SVC has no epsilon: the grid is C x gamma only
    assert len(mp.peer_grid("svr", classification=True)) == len(mp.GRIDS["svr"]["C"]) * len(mp.GRIDS["svr"]["gamma_x"])
    assert all("epsilon" not in p for p in mp.peer_grid("svr", classification=True))


def test_pick_takes_the_best_validation_metric_in_either_direction_first_of_ties():
    scored = [({"C": 1}, 0.9), ({"C": 10}, 0.7), ({"C": 100}, 0.7), ({"C": 1000}, 0.8)]
    assert mp.pick(scored, lower_is_better=True) == ({"C": 10}, 0.7)
    assert mp.pick(scored, lower_is_better=False) == ({"C": 1}, 0.9)


def test_tune_reports_the_test_metric_of_the_validation_pick_not_the_best_test():
    # the row's setting is the grid point best on validation, and its test metric is that point's
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    y = x[:, 0] * 2.0
    m = {"classification": False, "kept": 3}
    for part, sl in (("train", slice(0, 40)), ("val", slice(40, 50)), ("test", slice(50, 60))):
        m[f"raw_{part}"], m[f"z_{part}"], m[f"y_{part}"] = x[sl], x[sl], y[sl]
    row = mp.tune("freesolv", 0, "svr", m)
    vals = [g["val_rmse"] for g in row["grid"]]
    assert row["val_rmse"] == min(vals)
    chosen = {k: v for k, v in row["grid"][vals.index(min(vals))].items() if k != "val_rmse"}
    assert row["setting"] == chosen
    _, test_pred = mp.fit_predict("svr", chosen, m)
    assert row["test_rmse"] == pytest.approx(mp.score(False, m["y_test"], test_pred))


def test_non_constant_drops_constant_and_all_nan_columns():
    train = np.array([[1.0, 5.0, np.nan, 0.0], [2.0, 5.0, np.nan, np.nan], [3.0, 5.0, np.nan, 1.0]])
    assert mp.non_constant(train).tolist() == [0, 3]


def test_best_peer_by_mean_validation_over_splits():
    rows = [{"peer": "svr", "split": 0, "val_rmse": 1.0}, {"peer": "svr", "split": 1, "val_rmse": 0.6},
            {"peer": "hgb", "split": 0, "val_rmse": 0.7}, {"peer": "hgb", "split": 1, "val_rmse": 0.95},
            # chemprop: two seeds of split 0, averaged within the split first (mean 0.5), split 1 1.2
            {"peer": "chemprop", "split": 0, "val_rmse": 0.4}, {"peer": "chemprop", "split": 0, "val_rmse": 0.6},
            {"peer": "chemprop", "split": 1, "val_rmse": 1.2}]
    assert mp.best_peer(rows, lower_is_better=True) == "svr"  # 0.80 vs 0.825 vs 0.85
    assert mp.best_peer(rows, lower_is_better=False) == "chemprop"


def test_paired_per_split_averages_vecset_seeds_then_takes_the_standard_error_over_splits():
    vecset = [{"split": s, "seed": e, "test_rmse": 1.0 + 0.1 * s + 0.01 * e} for s in range(3) for e in range(3)]
    peer = [{"split": s, "test_rmse": 1.05 + 0.12 * s} for s in range(3)]
    p = mp.paired(vecset, peer, "test_rmse")
    diffs = [(1.01 + 0.1 * s) - (1.05 + 0.12 * s) for s in range(3)]
    assert p["unit"] == "split" and p["n"] == 3
    assert p["diffs"] == pytest.approx(diffs)
    assert p["difference"] == pytest.approx(np.mean(diffs))
    assert p["se"] == pytest.approx(np.std(diffs, ddof=1) / math.sqrt(3))


def test_paired_with_one_split_pairs_each_vecset_seed_with_the_peer():
    vecset = [{"split": 0, "seed": e, "test_auc": v} for e, v in enumerate((0.92, 0.93, 0.91))]
    peer = [{"split": 0, "test_auc": 0.90}]
    p = mp.paired(vecset, peer, "test_auc")
    assert p["unit"] == "seed" and p["n"] == 3
    assert p["difference"] == pytest.approx(0.02)
    assert p["se"] == pytest.approx(np.std([0.02, 0.03, 0.01], ddof=1) / math.sqrt(3))
    with pytest.raises(ValueError, match="no split in common"):
        mp.paired(vecset, [{"split": 1, "test_auc": 0.9}], "test_auc")


def test_a_rerun_of_one_peer_keeps_the_other_rows_and_chooses_from_all(tmp_path):
    import json

    path = tmp_path / "peers.json"
    old = [{"set": "freesolv", "peer": "svr", "split": 0, "val_rmse": 0.9, "test_rmse": 1.0},
           {"set": "freesolv", "peer": "hgb", "split": 0, "val_rmse": 0.8, "test_rmse": 1.1}]
    path.write_text(json.dumps({"rows": old, "commands": {"freesolv/svr": "a", "freesolv/hgb": "a"}}))
    new = [{"set": "freesolv", "peer": "svr", "split": 0, "val_rmse": 0.7, "test_rmse": 0.95}]
    rows, commands = mp.merged(path, new, {"freesolv/svr": "b"})
    assert rows == [old[1], new[0]] and commands == {"freesolv/hgb": "a", "freesolv/svr": "b"}
    assert mp.merged(tmp_path / "none.json", new, {}) == (new, {})
    designs = {"chosen": {"freesolv": {"design": "3d"}},
               "rows": [{"set": "freesolv", "design": "3d", "split": 0, "seed": e, "test_rmse": 0.9 + 0.01 * e}
                        for e in range(3)] + [{"set": "freesolv", "design": "2d", "split": 0, "seed": 0, "test_rmse": 5}]}
    best, pairs = mp.compare(rows, designs)
    assert best == {"freesolv": "svr"}  # validation 0.7 beats hgb's 0.8 (its test 1.1 plays no part)
    assert pairs["freesolv"]["peer"] == "svr" and pairs["freesolv"]["unit"] == "seed"
    assert pairs["freesolv"]["difference"] == pytest.approx(0.91 - 0.95)
