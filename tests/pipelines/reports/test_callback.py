"""ReportWriter in a multi-task run: every task's reports and pictures in its own folder,
with the numbers the test metrics logged for that task, the run's curves with a panel per
task metric, and the figures in TensorBoard."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from vecset.pipelines.cli import run_cli
from vecset.pipelines.reports.curves import curve_columns

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def multitask_run(tmp_path_factory) -> Path:
    cwd = os.getcwd()
    root = tmp_path_factory.mktemp("mt_reports")
    os.chdir(root)
    try:
        run_cli(["fit", "--config", str(ROOT / "configs" / "debug_multitask.yaml"), "--trainer.max_epochs=1",
                 "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"])
        return Path.cwd() / "runs" / "debug_multitask" / "version_0"
    finally:
        os.chdir(cwd)


def test_every_task_gets_its_report_and_picture(multitask_run):
    res = json.loads((multitask_run / "results.json").read_text())
    cwd = multitask_run.parents[2]  # the paths are relative to the run's working directory
    written = {str((cwd / p).relative_to(multitask_run)) for p in res["plots"]}
    assert written == {"curves.png", "above/test_per_class.json", "above/confusion_matrix.png",
                       "mean/parity.png", "mean/test_regression.json"}
    for name in ("curves.png", "above/confusion_matrix.png", "mean/parity.png"):
        assert (multitask_run / name).stat().st_size > 1000
    above = json.loads((multitask_run / "above" / "test_per_class.json").read_text())
    mean = json.loads((multitask_run / "mean" / "test_regression.json").read_text())
    # each report scores what its task's test metric scored
    assert above["accuracy"] == pytest.approx(res["test"]["above/test_acc"], abs=1e-6)
    assert above["classes"] == ["below", "above"]
    assert mean["rmse"] == pytest.approx(res["test"]["mean/test_rmse"], rel=1e-5)
    assert mean["mae"] == pytest.approx(res["test"]["mean/test_mae"], rel=1e-5)
    assert mean["count"] == 200


def test_curves_have_a_panel_per_task_metric(multitask_run):
    per_epoch = pd.read_csv(multitask_run / "metrics.csv").groupby("epoch").last()
    assert {"above/val_acc", "mean/val_rmse", "mean/val_mae", "val_loss", "train_loss_epoch"} <= set(curve_columns(per_epoch))


def test_figures_go_to_tensorboard(multitask_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = set()
    for f in multitask_run.glob("events.out.tfevents.*"):
        acc = EventAccumulator(str(f), size_guidance={"images": 0})
        acc.Reload()
        tags |= set(acc.Tags()["images"])
    assert tags == {"reports/curves", "above/confusion_matrix", "mean/parity"}
