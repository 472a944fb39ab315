"""bench/batch_size.py (issue 44): each batch size a ``vecset fit`` at the scaled learning rate, the
batch size chosen on validation only; --dry on the debug job in seconds."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import batch_size as bs  # noqa: E402

TINY = "--data.init_args.n_train 40 --data.init_args.n_val 16 --data.init_args.n_test 16"


def test_dry_run_writes_a_row_per_batch_size_and_the_choice(tmp_path):
    out = bs.main(["--config", "configs/debug.yaml", "--dry", "--batch-sizes", "8", "32", "--args", TINY,
                   "--out", str(tmp_path / "res" / "batch_size.json")])
    payload = json.loads(out.read_text())
    rows = payload["rows"]
    assert payload["reference_batch"] == 64 and payload["rule"] == "sqrt" and payload["train_items"] == 40
    assert [r["batch_size"] for r in rows] == [8, 32]
    # configs/debug.yaml's lr 0.003 is for its batch 64: sqrt(8/64) and sqrt(32/64) of it
    assert [r["lr"] for r in rows] == pytest.approx([0.003 * math.sqrt(1 / 8), 0.003 * math.sqrt(1 / 2)])
    for r in rows:
        assert {"epochs", "steps", "items_per_s", "val_acc", "test_acc", "command"} <= set(r)
        assert r["steps"] == 2 and r["monitor"] == "val_acc" and r["mode"] == "max" and 0 <= r["test_acc"] <= 1
        assert r["command"].startswith(f"vecset fit --config configs/debug.yaml --data.init_args.batch_size {r['batch_size']} "
                                       "--model.init_args.lr_reference_batch 64 --model.init_args.lr_scaling sqrt ")
    best = max(rows, key=lambda r: (r["val_acc"], -r["batch_size"]))
    assert payload["chosen"]["batch_size"] == best["batch_size"] and payload["chosen"]["by"] == "val_acc (max)"


def test_items_count_each_epochs_short_last_batch():
    assert bs.trained_items(steps=2, batch=16, n_train=1293) == 32  # within the first epoch
    assert bs.trained_items(steps=3 * 6, batch=256, n_train=1293) == 3 * 1293  # 6 batches an epoch, the last 13
    assert bs.trained_items(steps=3 * 6 + 1, batch=256, n_train=1293) == 3 * 1293 + 256


def test_a_metric_to_minimize_chooses_the_lowest():
    rows = [{"batch_size": b, "lr": 1e-3, "monitor": "val_rmse", "mode": "min", "val_rmse": v, "test_rmse": t}
            for b, v, t in ((128, 1.2, 1.0), (256, 0.9, 1.5), (512, 0.9, 0.5))]
    # chosen on validation only (a tie: the smaller batch), whatever the test says
    assert bs.choose(rows) == {"batch_size": 256, "lr": 1e-3, "by": "val_rmse (min)", "val_rmse": 0.9, "test_rmse": 1.5}


def test_a_run_without_a_budget_names_the_options(capsys):
    with pytest.raises(SystemExit):
        bs.main(["--config", "configs/digits.yaml"])
    assert "give the budget: --epochs N (equal epochs) or --minutes M" in capsys.readouterr().err
