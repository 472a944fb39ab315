"""bench/molecule_trunk.py --arm: arms of molecule_pretrain.py runs over splits and seeds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import molecule_trunk as mt  # noqa: E402


def write(path: Path, split: int, seed: int | None, val: float, test: float, metric: str = "test_rmse") -> None:
    run = {"best_val": val, "epochs": 100, "train_seconds": 1.0, "test": {"test_rmse": test}}
    path.write_text(json.dumps({"command": "c", "checkpoint": "k", "loadavg_at_start": ["0"], "metric": metric,
                                "seed": seed, "splits": [{"split": split, "pretrained": run}]}))


def test_arms_are_compared_on_the_split_seed_pairs_all_have(tmp_path):
    for split, seed, val, test in [(0, None, 1.0, 0.9), (0, 1, 1.2, 1.1), (1, 1, 0.8, 0.7)]:
        write(tmp_path / f"a_{split}_{seed}.json", split, seed, val, test)
    # the second arm: better by 0.1 and 0.3 on val, 0.2 and 0.0 on test; its split 1 seed 1 is missing
    for split, seed, val, test in [(0, 0, 0.9, 0.7), (0, 1, 0.9, 1.1), (1, 0, 0.1, 0.1)]:
        write(tmp_path / f"b_{split}_{seed}.json", split, seed, val, test)
    out = tmp_path / "out.json"
    res = mt.compare_arms([f"ref={tmp_path}/a_*.json", f"big={tmp_path}/b_*.json"], out)
    assert res["compared_on"] == [[0, 0], [0, 1]]  # a seed of None is seed 0
    assert res["mean"] == {"ref": {"val": 1.1, "test": 1.0}, "big": {"val": 0.9, "test": 0.9}}
    p = res["paired"]["big - ref"]
    assert p["val"] == {"mean": -0.2, "se": 0.1, "n": 2} and p["test"] == {"mean": -0.1, "se": 0.1, "n": 2}
    assert res["chosen_on_validation"] == "big" and json.loads(out.read_text())["chosen_on_validation"] == "big"


def test_an_arm_matching_nothing_or_not_rmse_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no molecule_pretrain.py JSON matches"):
        mt.compare_arms([f"ref={tmp_path}/none_*.json"], tmp_path / "o.json")
    write(tmp_path / "auc.json", 0, 0, 0.9, 0.9, metric="roc_auc")
    with pytest.raises(SystemExit, match="compares RMSE runs .* roc_auc"):
        mt.compare_arms([f"ref={tmp_path}/auc.json"], tmp_path / "o.json")
