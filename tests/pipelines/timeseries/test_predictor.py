"""The shipped time-series predictor (``vecset/models/japanese_vowels/``, packed by ``vecset pack``
from a run of configs/timeseries.yaml): the run's test accuracy through the predictor, files and
arrays alike, bad series as error rows, and the command's ``--series`` option."""

from __future__ import annotations

import csv
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from vecset.encoders.timeseries import read_series
from vecset.pipelines.pretrained import command_main, models_dir, pretrained

ROOT = Path(__file__).resolve().parents[3]
SERIES = ROOT / "data" / "japanese_vowels"


@pytest.fixture(scope="module")
def p():
    return pretrained("japanese_vowels")


def test_the_predictor_reproduces_the_runs_test_accuracy(p):
    card = json.loads((models_dir() / "japanese_vowels" / "card.json").read_text())
    assert card["predictor"] == "vecset.pipelines.timeseries.predictor.SeriesPredictor"
    # the run's own test (Lightning, results.json) and the predictor's over the same 370 series
    assert card["test_through_predictor"]["count"] == 370
    assert card["test_through_predictor"]["accuracy"] == pytest.approx(card["run"]["test"]["test_acc"], abs=1e-6)
    sl = card["slice"]
    rows = p.predict([str(ROOT / f) for f in sl["inputs"]])
    assert p.score(rows, sl["targets"])["accuracy"] == pytest.approx(sl["metrics"]["accuracy"], abs=1e-9)


def test_a_file_and_its_array_predict_alike_and_bad_series_are_error_rows(p, tmp_path):
    path = SERIES / "test_001.csv"
    x, _ = read_series(path)
    bad = tmp_path / "other.csv"
    bad.write_text("a,b\n1,2\n")
    rows = p.predict([str(path), x.numpy(), np.zeros((5, 3)), str(tmp_path / "none.csv"), str(bad)])
    assert rows[0]["error"] == rows[1]["error"] == "" and rows[0]["prediction"] == rows[1]["prediction"]
    assert rows[0]["probability"] == pytest.approx(rows[1]["probability"], abs=1e-6)
    assert rows[2]["error"].startswith("expected a series of shape [T, 12] (T >= 1 steps of the channels c01,")
    assert rows[3]["error"] == f"{tmp_path / 'none.csv'}: no such series file"
    assert rows[4]["error"].startswith(f"{bad}:1: channels ['a', 'b'] differ")
    assert rows[4]["prediction"] == ""


def test_the_command_takes_series_files():
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = command_main(["--model", "japanese_vowels", "--series", str(SERIES / "test_001.csv")])
    assert rc == 0, err.getvalue()
    (row,) = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert list(row) == ["input", "prediction", "probability", "error"] and row["prediction"] == "1"
