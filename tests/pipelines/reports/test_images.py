"""Image reports: the attention grid over the encoder's patches, and the pictures written
(confusion matrix with class names, attention maps) with the numbers the test metric logs."""

from __future__ import annotations

import json

import pytest
import pytorch_lightning as pl
import torch

from vecset.backbone import Backbone
from vecset.encoders import PatchEncoder
from vecset.encoders.image import collate_images
from vecset.heads import SequenceHead
from vecset.pipelines import DigitsDataModule, TaskModule
from vecset.pipelines.images.mistakes import MistakesReport
from vecset.pipelines.images.reports import AttentionMapsReport, attention_grid
from vecset.pipelines.reports.base import ReportContext
from vecset.pipelines.reports.defaults import default_reports


def _tiny_model(pooling: str, cls_token: bool = False, window: int | None = None) -> TaskModule:
    torch.manual_seed(0)
    return TaskModule(PatchEncoder(1, 16, 2), Backbone(16, depth=1, heads=2, cls_token=cls_token, window=window),
                      SequenceHead(16, 10, pooling=pooling))


@pytest.mark.parametrize("pooling,cls_token,window", [("attention", False, None), ("mean", False, None),
                                                      ("cls", True, None), ("mean", False, 1)])
def test_attention_grid_is_a_distribution_over_patches(pooling, cls_token, window):
    dm = DigitsDataModule()
    dm.setup("test")
    batch = collate_images([dm.sets["test"][i] for i in range(3)])
    # window 1 over 16 patches: the layer keeps only its band, which the grid expands
    grid, probs, _ = attention_grid(_tiny_model(pooling, cls_token, window), batch)
    assert grid.shape == (3, 4, 4) and probs.shape == (3, 10)
    torch.testing.assert_close(grid.sum((1, 2)), torch.ones(3))


def test_reports_written_with_the_logged_test_accuracy(tmp_path):
    dm = DigitsDataModule()
    model = _tiny_model("attention")
    trainer = pl.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False)
    acc = trainer.test(model, datamodule=dm, verbose=False)[0]["test_acc"]
    model.eval()
    reports = default_reports(dm)
    assert [type(r) for r in reports[1:]] == [AttentionMapsReport, MistakesReport]
    reports[1] = AttentionMapsReport(images=4)
    paths = [p for r in reports for p in r.write(ReportContext(model, dm, tmp_path))]
    assert [p.name for p in paths] == ["test_per_class.json", "confusion_matrix.png", "attention_maps.png",
                                       "worst_mistakes.png"]
    assert all(p.stat().st_size > 1000 for p in paths[1:])
    rep = json.loads(paths[0].read_text())
    assert rep["count"] == 360 and rep["accuracy"] == pytest.approx(acc, abs=1e-6)
    assert [r["class"] for r in rep["per_class"]] == [str(d) for d in range(10)]
    assert not model.training and not any(m.training for m in model.modules())  # still in eval


def test_image_reports_skip_attention_maps_for_the_cnn(tmp_path):
    from vecset.backbone import GridResNet
    from vecset.encoders import PixelEncoder

    torch.manual_seed(0)
    model = TaskModule(PixelEncoder(1, 8, positional="none"), GridResNet(8, widths=(8,), blocks=1), SequenceHead(8, 10))
    dm = DigitsDataModule()
    dm.setup("test")
    reports = [*default_reports(dm)[:1], AttentionMapsReport(images=4), MistakesReport(images=4)]
    paths = [p for r in reports for p in r.write(ReportContext(model, dm, tmp_path))]
    assert [p.name for p in paths] == ["test_per_class.json", "confusion_matrix.png", "worst_mistakes.png"]
