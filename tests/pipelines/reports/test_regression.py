"""The regression report: its errors on given values, and the parity picture."""

from __future__ import annotations

import json

import numpy as np
import pytest
import pytorch_lightning as pl
import torch

from vecset.backbone import Backbone
from vecset.encoders import VectorEncoder
from vecset.heads import SequenceHead
from vecset.pipelines import SyntheticSetDataModule, TaskModule
from vecset.pipelines.reports.base import ReportContext
from vecset.pipelines.reports.regression import ParityReport, errors


def test_errors_overall_and_per_target():
    pred = np.array([[1.0, 0.0], [3.0, 2.0]], dtype=np.float32)
    true = np.array([[0.0, 0.0], [1.0, 0.0]], dtype=np.float32)
    e = errors(pred, true, ["a", "b"])
    assert e["rmse"] == pytest.approx(np.sqrt((1 + 0 + 4 + 4) / 4)) and e["mae"] == pytest.approx(5 / 4)
    assert e["per_target"]["a"] == {"rmse": pytest.approx(np.sqrt(5 / 2)), "mae": 1.5}
    assert e["per_target"]["b"] == {"rmse": pytest.approx(np.sqrt(2)), "mae": 1.0} and e["count"] == 2


def test_parity_report_in_target_units_equals_the_logged_test_rmse(tmp_path):
    dm = SyntheticSetDataModule(n_train=64, n_val=16, n_test=48, batch_size=16, target="mean")
    torch.manual_seed(0)
    model = TaskModule(VectorEncoder(2, 16), Backbone(16, depth=1, heads=2), SequenceHead(16, 1, task="regression"))
    dm.setup("fit")
    model.head.fit_scaler(dm.data_spec("fit").train_targets)  # predictions in target units, not standardized ones
    trainer = pl.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False)
    logged = trainer.test(model, datamodule=dm, verbose=False)[0]
    paths = ParityReport().write(ReportContext(model, dm, tmp_path))
    assert [p.name for p in paths] == ["parity.png", "test_regression.json"]
    rep = json.loads(paths[1].read_text())
    assert rep["rmse"] == pytest.approx(logged["test_rmse"], rel=1e-5) and rep["count"] == 48
    assert rep["mae"] == pytest.approx(logged["test_mae"], rel=1e-5) and list(rep["per_target"]) == ["mean"]
    assert paths[0].stat().st_size > 1000


def test_parity_panel_returns_the_rmse_and_draws_error_bars_only_with_a_std():
    import matplotlib.pyplot as plt

    from vecset.pipelines.reports.regression import parity_panel

    fig, (a, b) = plt.subplots(1, 2)
    pred, true = np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 2.0])
    assert parity_panel(a, pred, true, "y") == pytest.approx(np.sqrt(5 / 3))
    assert not a.containers and a.get_ylabel() == "predicted y"
    parity_panel(b, pred, true, "y", std=np.array([0.1, 0.2, 0.3]))
    assert len(b.containers) == 1 and b.get_ylabel() == "predicted y (+-1 std)"
    plt.close(fig)
