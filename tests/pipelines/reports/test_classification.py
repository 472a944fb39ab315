"""The per-class report (accuracy per class, confusion matrix) of classification and labeling
tasks: its numbers on given labels, and the karate (graph nodes) and POS (tokens) debug runs,
whose reports score what their logged test accuracy scored."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from vecset.encoders.text import UPOS, read_conllu
from vecset.pipelines.cli import run_cli
from vecset.pipelines.reports.classification import per_class_report

ROOT = Path(__file__).resolve().parents[3]


def test_per_class_report_counts():
    y = np.array([0, 0, 1, 2, 2, 2])
    p = np.array([0, 1, 1, 2, 0, 2])
    rep = per_class_report(y, p, ["a", "b", "c", "d"])
    assert rep["accuracy"] == pytest.approx(4 / 6) and rep["count"] == 6 and rep["errors"] == 2
    assert rep["per_class"] == [{"class": "a", "count": 2, "accuracy": 0.5}, {"class": "b", "count": 1, "accuracy": 1.0},
                                {"class": "c", "count": 3, "accuracy": pytest.approx(2 / 3)}]  # no row for unseen d
    assert rep["confusion"] == [[1, 1, 0, 0], [0, 1, 0, 0], [1, 0, 2, 0], [0, 0, 0, 0]]


def _assert_report(run_dir: Path, test_acc: float, count: int, classes: list[str]) -> None:
    rep = json.loads((run_dir / "test_per_class.json").read_text())
    assert rep["accuracy"] == pytest.approx(test_acc, abs=1e-6) and rep["count"] == count
    assert rep["classes"] == classes
    assert (run_dir / "confusion_matrix.png").stat().st_size > 1000


def test_karate_run_writes_its_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_cli(["fit", "--config", str(ROOT / "configs" / "karate.yaml"), "--trainer.max_epochs=5",
             "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"])
    run_dir = tmp_path / "runs" / "karate" / "version_0"
    res = json.loads((run_dir / "results.json").read_text())
    # 15 test nodes of 34: the other nodes' -100 targets are left out, as the metric leaves them
    _assert_report(run_dir, res["test"]["test_acc"], 15, ["Mr. Hi", "Officer"])
    assert {Path(p).name for p in res["plots"]} == {"curves.png", "test_per_class.json", "confusion_matrix.png",
                                                    "attention.png"}
    assert (run_dir / "attention.png").stat().st_size > 10_000  # the nodes' attention (test_vector_attention.py)


def test_pos_run_writes_its_report(tmp_path):
    cwd = os.getcwd()
    os.chdir(ROOT)  # the config's data paths are relative to the project
    try:
        run_cli(["fit", "--config", str(ROOT / "configs" / "pos_conllu.yaml"), "--trainer.max_epochs=3",
                 "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
                 f"--trainer.default_root_dir={tmp_path}", "--trainer.logger=false"])
    finally:
        os.chdir(cwd)
    res = json.loads((tmp_path / "results.json").read_text())  # no logger: the run directory is the root dir
    words = sum(len(s["forms"]) for s in read_conllu(ROOT / "data" / "conllu" / "sample.conllu")[0])
    _assert_report(tmp_path, res["test"]["test_acc"], words, UPOS)
    assert (tmp_path / "attention.png").stat().st_size > 10_000  # the first test sentence's words
