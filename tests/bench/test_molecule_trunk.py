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
    if metric == "roc_auc":  # B3DB: the ROC-AUC from its report, validation accuracy chose the checkpoint
        run = {"best_val": val, "epochs": 10, "train_seconds": 1.0, "test": {"test_acc": 0.5}, "roc_auc": test}
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


def test_roc_auc_arms_are_chosen_by_the_higher_validation_accuracy(tmp_path):
    for split, val, auc in [(0, 0.80, 0.92), (1, 0.70, 0.90)]:
        write(tmp_path / f"a_{split}.json", split, 0, val, auc, metric="roc_auc")
    for split, val, auc in [(0, 0.82, 0.91), (1, 0.74, 0.89)]:
        write(tmp_path / f"b_{split}.json", split, 0, val, auc, metric="roc_auc")
    res = mt.compare_arms([f"scratch={tmp_path}/a_*.json", f"trunk={tmp_path}/b_*.json"], tmp_path / "o.json")
    assert res["metric"] == "roc_auc" and res["mean"]["trunk"] == {"val": 0.78, "test": 0.9}
    assert res["paired"]["trunk - scratch"]["test"] == {"mean": -0.01, "se": 0.0, "n": 2}
    assert res["chosen_on_validation"] == "trunk"  # higher validation accuracy, though lower on test


def test_an_arm_matching_nothing_or_arms_of_two_metrics_are_refused(tmp_path):
    with pytest.raises(SystemExit, match="no molecule_pretrain.py JSON matches"):
        mt.compare_arms([f"ref={tmp_path}/none_*.json"], tmp_path / "o.json")
    write(tmp_path / "auc.json", 0, 0, 0.9, 0.9, metric="roc_auc")
    write(tmp_path / "rmse.json", 0, 0, 0.9, 0.9)
    with pytest.raises(SystemExit, match=r"the arms hold different metrics, \['roc_auc', 'test_rmse'\]"):
        mt.compare_arms([f"ref={tmp_path}/rmse.json", f"b={tmp_path}/auc.json"], tmp_path / "o.json")
    with pytest.raises(SystemExit, match=r"the files hold different metrics"):
        mt.compare_arms([f"ref={tmp_path}/*.json"], tmp_path / "o.json")
