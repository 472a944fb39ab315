"""Reports of a model trained in ``bf16-true`` or ``64-true`` (bf16 or fp64 weights): the batch
reaches the model in the weights' dtype and the reports' numbers are that model's; and a
report that fails is named in a warning while the others, and the run's results, are written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from report_helpers import Broken, TinyImages

from vecset.backbone import Backbone
from vecset.encoders import PatchEncoder, VectorEncoder
from vecset.encoders.image import collate_images
from vecset.heads import LabelingHead, SequenceHead
from vecset.pipelines import SyntheticSetDataModule, TaskModule
from vecset.pipelines.images.mistakes import MistakesReport
from vecset.pipelines.images.reports import AttentionMapsReport
from vecset.pipelines.reports.base import ReportContext
from vecset.pipelines.reports.binary import BinaryReport
from vecset.pipelines.reports.classification import ClassificationReport
from vecset.pipelines.reports.outputs import collect_test_outputs, inference, to_model
from vecset.pipelines.reports.regression import ParityReport
from vecset.pipelines.reports.uncertainty import UncertaintyReport
from vecset.pipelines.reports.vector_attention import attention_matrices

ROOT = Path(__file__).resolve().parents[3]
DTYPES = [torch.bfloat16, torch.float64]




@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_classification_reports_of_a_low_or_double_precision_model(tmp_path, dtype):
    torch.manual_seed(0)
    model = TaskModule(PatchEncoder(1, 8, patch_size=2), Backbone(8, depth=1, heads=2), SequenceHead(8, 2)).to(dtype)
    dm = TinyImages()
    ctx = ReportContext(model, dm, tmp_path)
    reports = (ClassificationReport(), BinaryReport(), MistakesReport(images=4), AttentionMapsReport(images=4))
    paths = [p for r in reports for p in r.write(ctx)]
    assert [p.name for p in paths] == ["test_per_class.json", "confusion_matrix.png", "test_binary.json",
                                       "roc_pr.png", "worst_mistakes.png", "attention_maps.png"]
    assert torch.get_default_dtype() == torch.float32  # restored after the reports' passes
    outs = ctx.test_outputs()
    assert all(o.output.dtype == torch.float32 for o in outs)  # on the host in fp32
    with inference(model):  # what this model (in its dtype) predicts
        pred = model(to_model(collate_images(dm.items), model)).argmax(-1)
    per_class = json.loads((tmp_path / "test_per_class.json").read_text())
    y = torch.stack([it["y"] for it in dm.items])
    assert per_class["accuracy"] == pytest.approx(float(pred.eq(y).float().mean()))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_regression_and_attention_reports_of_a_low_or_double_precision_model(tmp_path, dtype):
    torch.manual_seed(0)
    model = TaskModule(PatchEncoder(1, 8, patch_size=2), Backbone(8, depth=1, heads=2),
                       SequenceHead(8, 1, task="regression", regression_loss="gaussian_nll")).to(dtype)
    ctx = ReportContext(model, TinyImages(regression=True), tmp_path)
    paths = [p for r in (ParityReport(), UncertaintyReport()) for p in r.write(ctx)]
    assert [p.name for p in paths] == ["parity.png", "test_regression.json", "test_uncertainty.json",
                                       "calibration.png", "parity_errorbars.png"]
    # a set task's attention between the vectors
    sets = SyntheticSetDataModule(n_train=8, n_val=8, n_test=4, batch_size=1)
    sets.setup("test")
    labeler = TaskModule(VectorEncoder(2, 8), Backbone(8, depth=1, heads=2), LabelingHead(8, 2)).to(dtype)
    batch = next(iter(sets.test_dataloader()))
    weights, _, heads = attention_matrices(labeler, batch, heads="mean")
    assert weights.dtype == "float32" and heads == 2 and weights.sum(-1) == pytest.approx(1.0, abs=1e-2)
    outs = collect_test_outputs(labeler, sets.test_dataloader())
    assert sum(len(o.pred) for o in outs) == sum(int(o.batch["mask"].sum()) for o in outs)


def test_a_failing_report_is_named_and_the_others_are_written(tmp_path):
    from vecset.pipelines.reports.callback import write_task_reports

    torch.manual_seed(0)
    model = TaskModule(PatchEncoder(1, 8, patch_size=2), Backbone(8, depth=1, heads=2), SequenceHead(8, 2))
    ctx = ReportContext(model, TinyImages(), tmp_path)
    failed: list[str] = []
    with pytest.warns(UserWarning, match="report Broken failed") as w:
        paths = write_task_reports([Broken(), ClassificationReport()], ctx, failed)
    assert [p.name for p in paths] == ["test_per_class.json", "confusion_matrix.png"]
    assert failed == ["Broken"]
    first = str(w[0].message).splitlines()[0]
    assert first == ("report Broken failed (RuntimeError: mat1 and mat2 must have the same dtype); "
                     "the run's other reports and results.json are written")


def test_a_bf16_true_fit_writes_its_reports_and_results(tmp_path, monkeypatch):
    """configs/debug.yaml in bf16-true: the reports run, and a failing one (configured beside
    them) is recorded in results.json, which is written."""
    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    config = yaml.safe_load((ROOT / "configs" / "debug.yaml").read_text())
    config["trainer"]["callbacks"].append(
        {"class_path": "vecset.pipelines.reports.callback.ReportWriter",
         "init_args": {"reports": [{"class_path": "report_helpers.Broken"},
                                   {"class_path": "vecset.pipelines.reports.classification.ClassificationReport"}]}})
    (tmp_path / "debug.yaml").write_text(yaml.safe_dump(config))
    with pytest.warns(UserWarning, match="report Broken failed"):
        run_cli(["fit", "--config", "debug.yaml", "--trainer.precision", "bf16-true",
                 "--trainer.max_epochs=1", "--trainer.enable_progress_bar=false",
                 "--data.init_args.n_train=64", "--data.init_args.n_val=32", "--data.init_args.n_test=32"])
    run = tmp_path / "runs" / "debug" / "version_0"
    results = json.loads((run / "results.json").read_text())
    assert results["precision"] == "bf16-true"
    assert results["failed_reports"] == ["Broken"]
    assert json.loads((run / "test_per_class.json").read_text())["accuracy"] == \
        pytest.approx(results["test"]["test_acc"], abs=1e-6)
