"""Reports as configuration: the job's defaults (pipelines/reports/defaults.py), a list on the
ReportWriter callback in YAML that replaces them, a dict per task in a multi-task run, and an
end-to-end ``vecset fit --config configs/debug.yaml`` writing its reports."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from vecset.pipelines import SyntheticSetDataModule
from vecset.pipelines.cli import run_cli
from vecset.pipelines.images.mistakes import MistakesReport
from vecset.pipelines.images.reports import AttentionMapsReport
from vecset.pipelines.reports.base import ReportContext
from vecset.pipelines.reports.callback import ReportWriter, task_reports
from vecset.pipelines.reports.classification import ClassificationReport
from vecset.pipelines.reports.defaults import default_reports
from vecset.pipelines.reports.regression import ParityReport

ROOT = Path(__file__).resolve().parents[3]
TINY = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2", "--trainer.limit_val_batches=1",
        "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
        "--data.init_args.n_train=64", "--data.init_args.n_val=32", "--data.init_args.n_test=64"]
OVERRIDE = """
trainer:
  callbacks:
    - class_path: vecset.pipelines.reports.callback.ReportWriter
      init_args:
        reports:
          - class_path: vecset.pipelines.reports.regression.ParityReport
          - class_path: vecset.pipelines.images.reports.AttentionMapsReport
            init_args: {images: 3, layer: 0}
          - class_path: vecset.pipelines.images.mistakes.MistakesReport
            init_args: {images: 2}
"""


def writers(cli) -> list[ReportWriter]:
    return [c for c in cli.trainer.callbacks if isinstance(c, ReportWriter)]


def test_yaml_report_list_replaces_the_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports.yaml").write_text(OVERRIDE)
    cli = run_cli(["--config", str(ROOT / "configs" / "debug.yaml"), "--config", "reports.yaml"], run=False)
    (writer,) = writers(cli)  # the configured one, no default beside it
    assert [type(r) for r in writer.reports] == [ParityReport, AttentionMapsReport, MistakesReport]
    assert (writer.reports[1].images, writer.reports[1].layer, writer.reports[2].images) == (3, 0, 2)
    (default,) = writers(run_cli(["--config", str(ROOT / "configs" / "debug.yaml")], run=False))
    assert default.reports is None  # the job's defaults, chosen when writing


def test_defaults_follow_the_data_module_class():
    dm = SyntheticSetDataModule()
    assert [type(r) for r in default_reports(dm)] == [ClassificationReport]
    assert [type(r) for r in default_reports(SyntheticSetDataModule(target="mean"))] == [ParityReport]
    assert default_reports(types.SimpleNamespace(class_names=None)) == []  # not a vecset data module


def test_a_list_for_one_task_a_dict_for_several(tmp_path):
    dm = SyntheticSetDataModule()
    one = ReportContext(None, dm, tmp_path)
    mine = [ParityReport()]
    assert task_reports(mine, one) == mine
    assert [type(r) for r in task_reports(None, one)] == [ClassificationReport]
    above, mean = ReportContext(None, dm, tmp_path, "above"), ReportContext(None, dm, tmp_path, "mean")
    assert task_reports({"above": mine}, above) == mine
    assert [type(r) for r in task_reports({"above": mine}, mean)] == [ClassificationReport]  # left out: defaults
    with pytest.raises(ValueError, match="reports is a list, but this run has several tasks"):
        task_reports(mine, above)
    with pytest.raises(ValueError, match="reports is a dict of tasks, but this run has one task"):
        task_reports({"above": mine}, one)


def test_the_writer_refuses_a_task_the_model_lacks_at_setup():
    from vecset.pipelines.training.multitask import MultiTaskModule

    model = MultiTaskModule.__new__(MultiTaskModule)
    object.__setattr__(model, "tasks", ["above", "mean"])
    with pytest.raises(ValueError, match=r"name tasks \['speech'\] the model does not have"):
        ReportWriter({"speech": []}).setup(None, model, "fit")


def test_debug_fit_writes_its_reports_and_an_empty_list_writes_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = str(ROOT / "configs" / "debug.yaml")
    run_cli(["fit", "--config", cfg, *TINY])
    run = tmp_path / "runs" / "debug" / "version_0"
    res = json.loads((run / "results.json").read_text())
    assert sorted(Path(p).name for p in res["plots"]) == ["confusion_matrix.png", "curves.png", "test_per_class.json"]
    per_class = json.loads((run / "test_per_class.json").read_text())
    assert per_class["accuracy"] == pytest.approx(res["test"]["test_acc"], abs=1e-6) and per_class["count"] > 64
    (tmp_path / "none.yaml").write_text("trainer:\n  callbacks:\n    - class_path: "
                                        "vecset.pipelines.reports.callback.ReportWriter\n      init_args: {reports: []}\n")
    run_cli(["fit", "--config", cfg, "--config", "none.yaml", *TINY])
    res = json.loads((tmp_path / "runs" / "debug" / "version_1" / "results.json").read_text())  # the first config names the run
    assert [Path(p).name for p in res["plots"]] == ["curves.png"]  # the run's curves; no task report
