"""One test pass per task, shared by its reports: the model runs over the test split once for
the per-class, ROC/PR and worst-mistakes reports of a two-class image task, and once for the
parity and uncertainty reports of a regression task; what they write equals a direct pass."""

from __future__ import annotations

import json

import pytest
import torch
from report_helpers import N, TinyImages
from torchmetrics.functional.classification import binary_auroc

from vecset.backbone import Backbone
from vecset.encoders import PixelEncoder
from vecset.encoders.image import collate_images
from vecset.heads import SequenceHead
from vecset.pipelines import TaskModule
from vecset.pipelines.images.mistakes import MistakesReport
from vecset.pipelines.reports.base import ReportContext
from vecset.pipelines.reports.binary import BinaryReport
from vecset.pipelines.reports.classification import ClassificationReport
from vecset.pipelines.reports.regression import ParityReport
from vecset.pipelines.reports.uncertainty import UncertaintyReport


def counted(model: TaskModule) -> list[int]:
    calls = [0]
    model.register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return calls


def test_classification_reports_share_one_pass(tmp_path):
    torch.manual_seed(0)
    model = TaskModule(PixelEncoder(1, 8), Backbone(8, depth=1, heads=2), SequenceHead(8, 2))
    dm = TinyImages()
    calls = counted(model)
    ctx = ReportContext(model, dm, tmp_path)
    paths = [p for r in (ClassificationReport(), BinaryReport(), MistakesReport(images=4)) for p in r.write(ctx)]
    assert [p.name for p in paths] == ["test_per_class.json", "confusion_matrix.png", "test_binary.json",
                                       "roc_pr.png", "worst_mistakes.png"]
    assert calls[0] == 3  # the three test batches, once
    model.eval()
    with torch.no_grad():
        batch = collate_images(dm.items)
        prob = model(batch).softmax(-1)[:, 1]
    scores = json.loads((tmp_path / "test_binary.json").read_text())
    assert scores["roc_auc"] == pytest.approx(float(binary_auroc(prob, batch["y"])), abs=1e-6)
    assert scores["count"] == N and "class_balance" not in scores  # this data counts no classes
    per_class = json.loads((tmp_path / "test_per_class.json").read_text())
    assert per_class["accuracy"] == pytest.approx(float((prob > 0.5).long().eq(batch["y"]).float().mean()))


def test_regression_reports_share_one_pass(tmp_path):
    torch.manual_seed(0)
    model = TaskModule(PixelEncoder(1, 8), Backbone(8, depth=1, heads=2),
                       SequenceHead(8, 1, task="regression", regression_loss="gaussian_nll"))
    calls = counted(model)
    ctx = ReportContext(model, TinyImages(regression=True), tmp_path)
    paths = [p for r in (ParityReport(), UncertaintyReport()) for p in r.write(ctx)]
    assert [p.name for p in paths] == ["parity.png", "test_regression.json", "test_uncertainty.json",
                                       "calibration.png", "parity_errorbars.png"]
    assert calls[0] == 3
    rmse = json.loads((tmp_path / "test_regression.json").read_text())["rmse"]
    assert json.loads((tmp_path / "test_uncertainty.json").read_text())["rmse"] == pytest.approx(rmse, rel=1e-6)
    # a second context (a second test) runs its own pass: the cache is the context's
    ParityReport().write(ReportContext(model, TinyImages(regression=True), tmp_path))
    assert calls[0] == 6
