"""bench/molecule_pretrain_curve.py: the validation rows of a pretraining run's metrics.csv."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import molecule_pretrain_curve as mc  # noqa: E402


def test_one_row_per_validation_within_and_at_the_end_of_epochs(tmp_path):
    csv = tmp_path / "metrics.csv"
    csv.write_text("epoch,step,train_loss_step,val_atom_acc,val_desc_rmse,val_loss\n"
                   "0,49,1.5,,,\n"
                   "0,999,,0.85941,0.61344,0.76538\n"   # val_check_interval: mid-epoch
                   "0,1049,0.9,,,\n"
                   "1,1999,,0.87930,0.55136,0.62819\n")  # the end of an epoch
    rows = mc.curve(csv)
    assert [(r["epoch"], r["step"]) for r in rows] == [(0, 999), (1, 1999)]
    assert rows[0] == {"epoch": 0, "step": 999, "val_loss": 0.7654, "val_atom_acc": 0.8594, "val_desc_rmse": 0.6134}


def test_molecules_seen_count_the_steps_up_to_each_validation(tmp_path):
    csv = tmp_path / "metrics.csv"
    csv.write_text("epoch,step,val_atom_acc,val_desc_rmse,val_loss\n0,999,0.85,0.61,0.76\n0,1999,0.88,0.55,0.63\n")
    assert [r["molecules"] for r in mc.curve(csv, batch_size=64)] == [64_000, 128_000]
    assert "molecules" not in mc.curve(csv)[0]


def test_a_compared_curve_gets_molecules_from_its_own_batch_size(tmp_path):
    old = tmp_path / "old.json"
    old.write_text('{"curve": [{"epoch": 0, "step": 99, "val_loss": 0.7}]}')
    label, rows = mc.comparison(f"500 k={old}", batch_size=64)
    assert label == "500 k" and rows[0]["molecules"] == 6_400
    old.write_text('{"batch_size": 32, "curve": [{"epoch": 0, "step": 99, "val_loss": 0.7}]}')
    assert mc.comparison(f"a={old}", batch_size=64)[1][0]["molecules"] == 3_200


def test_a_bad_comparison_names_what_was_expected(tmp_path):
    with pytest.raises(SystemExit, match="expected LABEL=JSON"):
        mc.comparison("no_label.json", batch_size=64)
    bad = tmp_path / "x.json"
    bad.write_text('{"rows": []}')
    with pytest.raises(SystemExit, match=r"x.json: no 'curve' list"):
        mc.comparison(f"a={bad}", batch_size=64)


def test_a_run_folder_without_metrics_is_one_clear_line(tmp_path):
    with pytest.raises(SystemExit, match=r"metrics.csv: no such file"):
        mc.curve(tmp_path / "metrics.csv")
