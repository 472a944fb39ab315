"""The shipped predictors (pipelines/pretrained.py, vecset/models/): each loads, reproduces its
card's test metric on the card's fixed slice and its predictions for three known inputs, and
answers bad input with an error row while the other rows are still predicted."""

from __future__ import annotations

import csv
import io
import math
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

import vecset
from vecset.pipelines.pretrained import (
    REGISTRY,
    PredictorError,
    available,
    command_main,
    models_dir,
    pretrained,
    wants_shipped_model,
)

ROOT = Path(__file__).resolve().parents[2]
_cache: dict = {}


def load(name: str):
    """One predictor per name for the whole module (loading takes a second or two)."""
    if name not in _cache:
        _cache[name] = pretrained(name)
    return _cache[name]


def test_every_registered_predictor_is_shipped():
    assert available() == {name: True for name in REGISTRY}
    for name in REGISTRY:  # small: a few MB at most each
        assert (models_dir() / name / "model.pt").stat().st_size < 5e6
        # the guides link the copy under bench/results/predictors/: the same card
        copy = ROOT / "bench" / "results" / "predictors" / f"{name}.json"
        assert copy.read_text() == (models_dir() / name / "card.json").read_text(), name


@pytest.mark.parametrize("name", list(REGISTRY))
def test_slice_metric_and_known_predictions_match_the_card(name):
    p = load(name)
    card = p.card
    sl = card["slice"]
    if REGISTRY[name].kind == "digits":
        from sklearn.datasets import load_digits

        X = load_digits().data
        inputs = [X[i].reshape(8, 8) for i in sl["indices"]]
    else:
        inputs = sl["inputs"]
    got = p.score(p.predict(inputs), sl["targets"])
    want = sl["metrics"]
    assert set(got) == set(want)
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=1e-4), k
    # the card's numbers are this model's: the run's own test metric, measured by the training
    assert card["test_through_predictor"]["count"] > sl["first"]
    known = card["known"]
    if REGISTRY[name].kind == "digits":
        rows = p.predict([X[k["index"]].reshape(8, 8) for k in known])
    else:
        rows = p.predict([k["input"] for k in known])
    for row, k in zip(rows, known, strict=True):
        for col, v in k.items():
            if col in ("index", "input"):
                continue
            if isinstance(v, float):
                assert row[col] == pytest.approx(v, abs=1e-4), (row["input"], col)
            else:
                assert row[col] == v, (row["input"], col)


def test_molecule_bad_inputs_get_error_rows_and_the_rest_is_predicted():
    p = load("freesolv")
    smiles = ["CCO", "C1CC", "", "[Fe+2].[Fe+2]", "c1ccccc1O", 42]
    rows = p.predict(smiles)
    assert [r["input"] for r in rows] == ["CCO", "C1CC", "", "[Fe+2].[Fe+2]", "c1ccccc1O", "42"]  # none dropped
    assert rows[1]["error"].startswith("invalid SMILES 'C1CC': SMILES Parse Error: unclosed ring")
    assert rows[2]["error"] == "invalid SMILES '': empty SMILES"
    assert rows[5]["error"] == "expected a SMILES string, got int"
    for bad in (rows[1], rows[2], rows[5]):
        assert bad["expt"] == "" and bad["out_of_domain"] == ""
    # an iron salt is nothing like FreeSolv's organic molecules: predicted, and flagged
    assert rows[3]["error"] == "" and math.isfinite(rows[3]["expt"])
    assert rows[3]["out_of_domain"] is True and rows[3]["train_similarity"] < p.threshold
    assert rows[0]["out_of_domain"] is False and rows[0]["train_similarity"] == 1.0  # ethanol is in FreeSolv
    # the good rows are the same predicted alone
    assert rows[0]["expt"] == pytest.approx(p.predict(["CCO"])[0]["expt"], abs=1e-5)


def test_b3db_rows_carry_class_probabilities():
    p = load("b3db")
    rows = p.predict(["CCO", "not a smiles"])
    assert rows[0]["prediction"] in ("BBB-", "BBB+")
    assert rows[0]["P(BBB-)"] + rows[0]["P(BBB+)"] == pytest.approx(1.0, abs=1e-5)
    assert rows[0]["probability"] == max(rows[0]["P(BBB-)"], rows[0]["P(BBB+)"])
    assert rows[1]["error"].startswith("invalid SMILES 'not a smiles'") and rows[1]["prediction"] == ""


def test_g2p_bad_words_get_error_rows():
    p = load("g2p")
    rows = p.predict(["cat", "na\u00efve", "", "two words", "dog"])
    assert len(rows) == 5
    assert rows[1]["error"].startswith("'na\u00efve': characters outside the alphabet the model was trained on: '\u00ef'")
    assert rows[2]["error"] == "empty word"
    assert rows[3]["error"] == "'two words' holds a space: one word per input"
    assert rows[0]["pronunciation"] and rows[4]["pronunciation"] and not rows[0]["error"]
    assert rows[1]["pronunciation"] == ""


def test_digits_bad_images_get_error_rows(tmp_path):
    p = load("digits")
    good = np.zeros((8, 8))
    good[1:7, 3:5] = 16  # a bar: some digit
    rows = p.predict([good, np.zeros((4, 4)), np.full((8, 8), 99.0), str(tmp_path / "none.png")])
    assert rows[0]["error"] == "" and rows[0]["prediction"] in p.classes
    assert rows[1]["error"] == "expected an 8x8 image (or 1x8x8), got shape [4, 4]"
    assert rows[2]["error"].startswith("pixel values must be finite and within 0.0..16.0")
    assert rows[3]["error"] == f"{tmp_path / 'none.png'}: no such image file"


def test_python_api_is_one_import_away():
    assert vecset.pretrained("freesolv").predict(["CCO"])[0]["error"] == ""


def run_command(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = command_main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_command_line_smiles_and_csv_input(tmp_path):
    rc, out, err = run_command(["--model", "freesolv", "--smiles", "CCO", "C1CC"])
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["input"] for r in rows] == ["CCO", "C1CC"]
    assert float(rows[0]["expt"]) == pytest.approx(load("freesolv").predict(["CCO"])[0]["expt"], abs=1e-4)
    assert rows[1]["error"].startswith("invalid SMILES") and rows[1]["expt"] == ""
    assert err.startswith("1 of 2 inputs could not be predicted")
    src = tmp_path / "mols.csv"
    src.write_text("name,smiles\nethanol,CCO\nnothing,\nphenol,c1ccccc1O\n")
    rc, out, err = run_command(["--model", "freesolv", "--input", str(src), "--out", str(tmp_path / "p.csv")])
    assert rc == 0 and out == ""
    rows = list(csv.DictReader(open(tmp_path / "p.csv")))
    assert [r["input"] for r in rows] == ["CCO", "", "c1ccccc1O"]
    assert rows[1]["error"] == "invalid SMILES '': empty SMILES"


def test_command_line_words(tmp_path):
    rc, out, _ = run_command(["--model", "g2p", "--words", "hello", "world"])
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rc == 0 and [r["input"] for r in rows] == ["hello", "world"]
    want = {k["input"]: k["pronunciation"] for k in load("g2p").card["known"]}
    assert rows[0]["pronunciation"] == want["hello"] and rows[1]["pronunciation"] == want["world"]


def test_command_line_errors_name_the_option(tmp_path):
    rc, _, err = run_command(["--model", "nosuch", "--smiles", "C"])
    assert rc == 2 and err.splitlines()[0] == ("error: --model 'nosuch': no such shipped predictor; available: "
                                               + ", ".join(REGISTRY))
    rc, _, err = run_command(["--model", "freesolv", "--words", "cat"])
    assert rc == 2 and err.splitlines()[0] == "error: --words: not an input of --model freesolv (it takes --smiles or --input)"
    rc, _, err = run_command(["--model", "freesolv"])
    assert rc == 2 and err.startswith("error: --model freesolv: give its inputs with --smiles or --input FILE")
    src = tmp_path / "m.csv"
    src.write_text("SMILES\nCCO\n")
    rc, _, err = run_command(["--model", "freesolv", "--input", str(src)])
    assert rc == 2 and err.startswith(f"error: --input {src}: no column 'smiles' (--column)")
    with pytest.raises(PredictorError, match="^--model 'nosuch': no such shipped predictor"):
        pretrained("nosuch")


def test_only_a_model_name_takes_the_shipped_path():
    assert wants_shipped_model(["predict", "--model", "solubility", "--smiles", "CCO"])
    assert wants_shipped_model(["predict", "--model=g2p", "--words", "a"])
    # LightningCLI's own predict: a model config file, a class name, or any --config
    assert not wants_shipped_model(["predict", "--config", "c.yaml", "--model", "m.yaml"])
    assert not wants_shipped_model(["predict", "--model", "TaskModule"])
    assert not wants_shipped_model(["predict", "--config", "runs/x/config.yaml", "--ckpt_path", "best"])
    assert not wants_shipped_model(["fit", "--model", "solubility"])


def test_a_wheel_carries_every_shipped_file():
    """pyproject.toml's package data names each predictor's files (a wheel built from it held
    them: ``pip wheel .``, checked by hand; building one here would take minutes)."""
    import fnmatch

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["vecset"]
    for name in REGISTRY:
        for f in ("model.pt", "card.json"):
            assert any(fnmatch.fnmatch(f"models/{name}/{f}", p) for p in patterns), (name, f)


def test_an_ensemble_bundle_reports_the_members_spread(tmp_path):
    import shutil

    import torch

    src = models_dir() / "freesolv"
    bundle = torch.load(src / "model.pt", weights_only=True)
    shifted = {k: v.clone() for k, v in bundle["state_dict"].items()}
    shifted["head.target_mean"] += 0.5  # a member predicting 0.5 kcal/mol more for every molecule
    bundle["members"] = [bundle["state_dict"], shifted]
    torch.save(bundle, tmp_path / "model.pt")
    shutil.copy(src / "card.json", tmp_path / "card.json")
    p = pretrained("freesolv", tmp_path)
    assert p.columns == ["input", "expt", "expt_std", "train_similarity", "out_of_domain", "error"]
    one = load("freesolv").predict(["CCO"])[0]["expt"]
    row = p.predict(["CCO"])[0]
    # members: one, one, one + 0.5: the mean moves by a third of it, the std is their spread
    assert row["expt"] == pytest.approx(one + 0.5 / 3, abs=1e-4)
    assert row["expt_std"] == pytest.approx(float(np.std([0, 0, 0.5])), abs=1e-4)
