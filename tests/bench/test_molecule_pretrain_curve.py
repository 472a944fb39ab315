"""bench/molecule_pretrain_curve.py: the validation rows of a pretraining run's metrics.csv."""

from __future__ import annotations

import sys
from pathlib import Path

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
