"""The shipped predictors (pipelines/pretrained.py, pipelines/<job>/predictor.py, vecset/models/): each loads, reproduces its
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
from molecule_run_helpers import GEOMETRY_CONFIG

import vecset
from vecset.pipelines.images.predictor import ImagePredictor
from vecset.pipelines.predictor import PredictorError
from vecset.pipelines.pretrained import (
    available,
    command_main,
    models_dir,
    pretrained,
    shipped,
    wants_predictor,
)

ROOT = Path(__file__).resolve().parents[2]
FASHION_SLICE = ROOT / "data" / "fashion_mnist" / "t10k_first500.npz"  # scripts/make_fashion_slice.py
_cache: dict = {}


def load(name: str):
    """One predictor per name for the whole module (loading takes a second or two)."""
    if name not in _cache:
        _cache[name] = pretrained(name)
    return _cache[name]


def image_inputs(name: str, indices: list[int]) -> list[np.ndarray]:
    """Test images by index, in the predictor's raw range: load_digits' (0..16) or the shipped
    Fashion-MNIST slice's bytes (the first 500 test images)."""
    if name == "digits":
        from sklearn.datasets import load_digits

        X = load_digits().data
        return [X[i].reshape(8, 8) for i in indices]
    images = np.load(FASHION_SLICE)["images"]
    return [images[i] for i in indices]


def test_every_registered_predictor_is_shipped():
    assert {"b3db", "digits", "fashion_mnist", "freesolv", "g2p", "solubility"} <= set(shipped())
    assert all(available().values())
    for name in shipped():  # small: a few MB at most each
        assert (models_dir() / name / "model.pt").stat().st_size < 5e6
        # the guides link the copy under bench/results/predictors/ where there is one: the same card
        copy = ROOT / "bench" / "results" / "predictors" / f"{name}.json"
        if copy.is_file():
            assert copy.read_text() == (models_dir() / name / "card.json").read_text(), name


@pytest.mark.parametrize("name", shipped())  # every folder of vecset/models/: a new one is checked without an edit here
def test_slice_metric_and_known_predictions_match_the_card(name):
    check_card(load(name))


def check_card(p) -> None:
    """The card's slice metric and known predictions, reproduced by the predictor ``p``."""
    name, card = p.name, p.card
    sl = card["slice"]
    image = isinstance(p, ImagePredictor)
    inputs = image_inputs(name, sl["indices"]) if image else sl["inputs"]
    got = p.score(p.predict(inputs), sl["targets"])
    want = sl["metrics"]
    assert set(got) == set(want)
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=1e-4), k
    # the card's numbers are this model's: the run's own test metric, measured by the training
    assert len(sl["targets"]) == min(sl["first"], card["test_through_predictor"]["count"])  # the test split's first
    known = card["known"]
    if image:
        rows = p.predict(image_inputs(name, [k["index"] for k in known]))
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
        assert bad["expt"] == "" and bad["out_of_domain"] == "" and bad["conformer"] == ""
        assert bad["out_of_domain_reason"] == ""
    assert rows[0]["conformer"] is True and rows[4]["conformer"] is True  # the 3-D design: conformers embedded
    # an iron salt is nothing like FreeSolv's organic molecules: predicted, and flagged
    assert rows[3]["error"] == "" and math.isfinite(rows[3]["expt"])
    assert rows[3]["out_of_domain"] is True and rows[3]["train_similarity"] < p.threshold
    assert rows[3]["out_of_domain_reason"].startswith(f"train_similarity {rows[3]['train_similarity']} < 0.3; 2 fragments")
    assert rows[0]["out_of_domain"] is False and rows[0]["train_similarity"] == 1.0  # ethanol is in FreeSolv
    assert rows[0]["out_of_domain_reason"] == ""
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
    assert rows[1]["error"] == "expected an image of shape [8, 8] (or [1, 8, 8]), got shape [4, 4]"
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
    src.write_text("name,smiles,expt\nethanol,CCO,-5.0\nnothing,,\nphenol,c1ccccc1O,-6.6\n")
    rc, out, err = run_command(["--model", "freesolv", "--input", str(src), "--out", str(tmp_path / "p.csv")])
    assert rc == 0 and out == ""
    with open(tmp_path / "p.csv") as f:
        rows = list(csv.DictReader(f))
    # the input's columns kept (its expt, the measured value, renamed beside the predicted one)
    assert list(rows[0]) == ["name", "smiles", "expt_input", "expt", "expt_std", "train_similarity",
                             "out_of_domain", "out_of_domain_reason", "conformer", "error"]
    assert [(r["name"], r["smiles"], r["expt_input"]) for r in rows] == [
        ("ethanol", "CCO", "-5.0"), ("nothing", "", ""), ("phenol", "c1ccccc1O", "-6.6")]
    assert rows[1]["error"] == "invalid SMILES '': empty SMILES" and rows[1]["expt"] == ""
    assert float(rows[2]["expt"]) == pytest.approx(load("freesolv").predict("c1ccccc1O")[0]["expt"], abs=1e-4)


def test_command_line_words(tmp_path):
    rc, out, _ = run_command(["--model", "g2p", "--words", "hello", "world"])
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rc == 0 and [r["input"] for r in rows] == ["hello", "world"]
    want = {k["input"]: k["pronunciation"] for k in load("g2p").card["known"]}
    assert rows[0]["pronunciation"] == want["hello"] and rows[1]["pronunciation"] == want["world"]


def test_command_line_errors_name_the_option(tmp_path):
    rc, _, err = run_command(["--model", "nosuch", "--smiles", "C"])
    assert rc == 2 and err.splitlines()[0] == (
        f"error: --model 'nosuch': no such shipped predictor; give a shipped name ({', '.join(shipped())}), a model "
        "folder (vecset pack RUN_DIR OUT_DIR writes one) or a run folder (runs/<config>/version_<n>)")
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


def test_only_a_model_name_or_folder_takes_the_predictor_path(tmp_path):
    assert wants_predictor(["predict", "--model", "solubility", "--smiles", "CCO"])
    assert wants_predictor(["predict", "--model=g2p", "--words", "a"])
    assert wants_predictor(["predict", "--model", "Solubility", "--smiles", "CCO"])  # any case: a clear answer
    assert wants_predictor(["predict", "--model", str(tmp_path), "--smiles", "CCO"])  # a model or run folder
    # LightningCLI's own predict: a model config file, a class name, or any --config
    (tmp_path / "m.yaml").write_text("{}")
    assert not wants_predictor(["predict", "--model", str(tmp_path / "m.yaml")])
    assert not wants_predictor(["predict", "--config", "c.yaml", "--model", "m.yaml"])
    assert not wants_predictor(["predict", "--model", "TaskModule"])
    assert not wants_predictor(["predict", "--model", "vecset.pipelines.TaskModule"])
    assert not wants_predictor(["predict", "--config", "runs/x/config.yaml", "--ckpt_path", "best"])
    assert not wants_predictor(["fit", "--model", "solubility"])


def test_a_wheel_carries_every_shipped_file():
    """pyproject.toml's package data names each predictor's files (a wheel built from it held
    them: ``pip wheel .``, checked by hand; building one here would take minutes)."""
    import fnmatch

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["vecset"]
    for name in shipped():
        for f in ("model.pt", "card.json", *(["peer.skops"] if (models_dir() / name / "peer.skops").exists() else [])):
            assert any(fnmatch.fnmatch(f"models/{name}/{f}", p) for p in patterns), (name, f)


def test_an_ensemble_bundle_reports_the_members_spread(tmp_path):
    import shutil

    import torch

    src = models_dir() / "freesolv"  # a 3-member ensemble: the first member's weights, the others in "members"
    single = {k: v for k, v in torch.load(src / "model.pt", weights_only=True).items() if k != "members"}
    single["predictor"].pop("blend", None)  # the attention model alone (no peer.skops copied)
    shifted = {k: v.clone() for k, v in single["state_dict"].items()}
    shifted["head.target_mean"] += 0.5  # a member predicting 0.5 kcal/mol more for every molecule
    for folder, bundle in (("one", single), ("three", {**single, "members": [single["state_dict"], shifted]})):
        (tmp_path / folder).mkdir()
        torch.save(bundle, tmp_path / folder / "model.pt")
        shutil.copy(src / "card.json", tmp_path / folder / "card.json")
    p = pretrained(tmp_path / "three")
    assert p.columns == ["input", "expt", "expt_std", "train_similarity", "out_of_domain", "out_of_domain_reason",
                         "conformer", "error"]
    one = pretrained(tmp_path / "one").predict(["CCO"])[0]["expt"]
    row = p.predict(["CCO"])[0]
    # members: one, one, one + 0.5: the mean moves by a third of it, the std is their spread
    assert row["expt"] == pytest.approx(one + 0.5 / 3, abs=1e-4)
    assert row["expt_std"] == pytest.approx(float(np.std([0, 0, 0.5])), abs=1e-4)


def test_a_classification_ensemble_reports_the_members_spread_of_the_probability(tmp_path):
    import shutil

    import torch

    src = models_dir() / "b3db"
    single = {k: v for k, v in torch.load(src / "model.pt", weights_only=True).items() if k != "members"}
    single["predictor"].pop("blend", None)  # the attention model alone (no peer.skops copied)
    shifted = {k: v.clone() for k, v in single["state_dict"].items()}
    shifted["head.mlp.5.bias"] += torch.tensor([-20.0, 20.0])  # a member sure of BBB+ for every molecule
    for folder, bundle in (("one", single), ("two", {**single, "members": [shifted]})):
        (tmp_path / folder).mkdir()
        torch.save(bundle, tmp_path / folder / "model.pt")
        shutil.copy(src / "card.json", tmp_path / folder / "card.json")
    one = pretrained(tmp_path / "one")
    assert "probability_std" not in one.columns
    p_one = one.predict(["CCO"])[0]["P(BBB+)"]
    two = pretrained(tmp_path / "two")
    assert two.columns[:4] == ["input", "prediction", "probability", "probability_std"]
    row = two.predict(["CCO"])[0]
    # members: p and 1: the mean of the two, the spread half their difference
    assert row["P(BBB+)"] == pytest.approx((p_one + 1) / 2, abs=1e-4)
    assert row["probability_std"] == pytest.approx((1 - p_one) / 2, abs=1e-4)


def test_predicting_imports_no_lightning(tmp_path):
    """``import vecset; vecset.pretrained`` and ``vecset predict --model`` (a molecule, a word, an
    image file) import torch and the model's parts: not Lightning, torchmetrics or torchvision
    (seconds each: the command's start). A child process: this one has them all."""
    import json
    import subprocess
    import sys

    from PIL import Image

    png = tmp_path / "digit.png"
    Image.fromarray((image_inputs("digits", [0])[0] * 255 / 16).astype(np.uint8)).save(png)
    code = f"""
import json, sys
import vecset
vecset.pretrained
from vecset.command import main
for i, args in enumerate([["freesolv", "--smiles", "CCO"], ["g2p", "--words", "cat"], ["digits", "--images", {str(png)!r}]]):
    sys.argv = ["vecset", "predict", "--model", args[0], *args[1:], "--out", {str(tmp_path)!r} + f"/{{i}}.csv"]
    try:
        main()
    except SystemExit as e:
        assert e.code == 0, e.code
heavy = ["lightning", "pytorch_lightning", "lightning_fabric", "torchmetrics", "torchvision"]
print(json.dumps([m for m in heavy if m in sys.modules]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
    rows = [list(csv.DictReader(open(tmp_path / f"{i}.csv"))) for i in range(3)]
    assert [r[0]["error"] for r in rows] == ["", "", ""]
    assert rows[2][0]["prediction"] == load("digits").predict(image_inputs("digits", [0]))[0]["prediction"]


def test_the_plain_model_is_the_lightning_modules():
    """``build_model``'s nn.Modules (no Lightning) compute what the TaskModule of the same
    ``model.pt`` computes (Lightning's ``load_from_checkpoint``)."""
    import warnings

    import torch

    from vecset.pipelines.training.task import TaskModule

    for name in ("digits", "freesolv"):
        p = load(name)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"pytorch_lightning\.cli")  # jsonargparse's deprecation, theirs
            ref = TaskModule.load_from_checkpoint(models_dir() / name / "model.pt", map_location="cpu",
                                                  weights_only=True).eval()
        if name == "digits":
            batch = {"image": torch.stack([p.prepare(x) for x in image_inputs("digits", [0, 1, 2])])}
        else:
            batch = p.featurizer.collate([p.prepare(s) for s in ("CCO", "c1ccccc1O", "CC(=O)N")])
        with torch.inference_mode():
            assert torch.equal(p.model(batch), ref(batch)), name


def test_a_model_file_naming_other_code_is_refused(tmp_path):
    import shutil

    import torch

    bundle = torch.load(models_dir() / "digits" / "model.pt", weights_only=True)
    bundle["hyper_parameters"]["head"] = {"class_path": "os.system", "init_args": {"command": "echo no"}}
    torch.save(bundle, tmp_path / "model.pt")
    shutil.copy(models_dir() / "digits" / "card.json", tmp_path / "card.json")
    with pytest.raises(PredictorError, match=r"model\.pt: hyper_parameters\.head\.class_path: 'os\.system' is not one "
                                             r"of vecset's classes"):
        pretrained(tmp_path)


def fashion_run(tmp_path: Path) -> Path:
    """A run directory as ``vecset fit`` leaves one (config.yaml, results.json, its best
    checkpoint), of a debug-sized Fashion-MNIST model's seeded initial weights; its data root:
    the shipped slice as idx files for both splits (no Debian package needed)."""
    import gzip
    import json
    import struct

    import torch
    import yaml

    from vecset.pipelines.predictor import PredictorModel, instantiate

    sl = np.load(FASHION_SLICE)
    n = len(sl["labels"])
    root = tmp_path / "fashion"
    root.mkdir()
    for split in ("train", "t10k"):
        (root / f"{split}-images-idx3-ubyte.gz").write_bytes(
            gzip.compress(struct.pack(">IIII", 0x803, n, 28, 28) + sl["images"].tobytes()))
        (root / f"{split}-labels-idx1-ubyte.gz").write_bytes(
            gzip.compress(struct.pack(">II", 0x801, n) + sl["labels"].tobytes()))
    d = 16
    hp = {"_class_path": "vecset.pipelines.TaskModule",
          "encoder": {"class_path": "vecset.encoders.PatchEncoder",
                      "init_args": {"in_channels": 1, "d_model": d, "patch_size": 7, "positional": "sinusoidal"}},
          "backbone": {"class_path": "vecset.backbone.Backbone", "init_args": {"d_model": d, "depth": 1, "heads": 2}},
          "head": {"class_path": "vecset.heads.SequenceHead",
                   "init_args": {"d_model": d, "num_outputs": 10, "task": "classification"}}}
    torch.manual_seed(0)
    model = PredictorModel(*(instantiate(hp[k], k) for k in ("encoder", "backbone", "head")))
    run = tmp_path / "runs" / "fashion_mnist" / "version_0"  # configs/fashion_mnist.yaml's run
    (run / "checkpoints").mkdir(parents=True)
    ckpt = run / "checkpoints" / "best-epoch000-val_acc0.1000.ckpt"
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": hp, "pytorch-lightning_version": "2.6.0"}, ckpt)
    (run / "config.yaml").write_text(yaml.safe_dump({"seed_everything": 0, "data": {
        "class_path": "vecset.pipelines.FashionMNISTDataModule", "init_args": {"root": str(root)}}}))
    (run / "results.json").write_text(json.dumps({"checkpoint": str(ckpt), "last_checkpoint": None, "monitor": "val_acc",
                                                  "best_val": 0.1, "test": {"test_acc": 0.1}, "epochs": 1}))
    return run


def test_fashion_mnist_from_a_run(tmp_path):
    """``scripts/ship_predictors.py fashion_mnist --from-run <run>`` packs the run's best
    checkpoint and writes its card; the predictor reproduces the card's slice metric on the
    shipped slice (the test the real model is held to), takes 28x28 arrays of bytes and image
    files alike, and answers bad images with error rows."""
    import importlib.util

    from PIL import Image

    spec = importlib.util.spec_from_file_location("ship_predictors", ROOT / "scripts" / "ship_predictors.py")
    ship = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ship)
    ship.main(["fashion_mnist", "--from-run", str(fashion_run(tmp_path)), "--out", str(tmp_path / "models")])
    p = pretrained(tmp_path / "models" / "fashion_mnist")
    card = p.card
    assert card["config"] == "configs/fashion_mnist.yaml" and card["checkpoint"] == "best-epoch000-val_acc0.1000.ckpt"
    assert card["slice"]["first"] == 500 and card["test_through_predictor"]["count"] == 500
    assert p.classes[0] == "T-shirt/top" and p.size == (28, 28)
    check_card(p)
    first = image_inputs("fashion_mnist", [0])[0]  # (28, 28) uint8
    png = tmp_path / "first.png"
    Image.fromarray(first).save(png)
    rows = p.predict([first, str(png), np.zeros((8, 8)), np.full((28, 28), 300.0), str(tmp_path / "none.png")])
    assert rows[0]["error"] == rows[1]["error"] == "" and rows[1]["prediction"] == rows[0]["prediction"]
    assert rows[1]["probability"] == pytest.approx(rows[0]["probability"], abs=1e-5)
    assert rows[2]["error"] == "expected an image of shape [28, 28] (or [1, 28, 28]), got shape [8, 8]"
    assert rows[3]["error"].startswith("pixel values must be finite and within 0.0..255.0 (the range of Fashion-MNIST)")
    assert rows[4]["error"] == f"{tmp_path / 'none.png'}: no such image file"


def test_instantiate_reads_init_args_dict_kwargs_and_nested_class_paths():
    from vecset.heads import Seq2SeqHead
    from vecset.pipelines.predictor import instantiate

    head = instantiate({"class_path": "vecset.heads.Seq2SeqHead", "init_args": {
        "d_model": 8, "decoder": {"class_path": "vecset.heads.TransformerDecoder", "init_args": {"d_model": 8, "depth": 1}}},
        "dict_kwargs": {"max_len": 5}}, "head")
    assert isinstance(head, Seq2SeqHead) and head.max_len == 5 and len(head.decoder.blocks) == 1


# -- a predictor trained with 3-D geometry ------------------------------------------------

UNEMBEDDABLE = "C1#CC1"  # cyclopropyne: RDKit cannot embed it in 3-D (encoders/graph/geometry.py)


@pytest.fixture(scope="module")
def geometry_run(tmp_path_factory):
    """A 2-step ``vecset fit`` of the tiny 3-D config on 30 FreeSolv molecules, packed by
    ``scripts/ship_predictors.py --from-run --no-blend``; (its run directory, the predictor, the config)."""
    import contextlib
    import importlib.util

    from vecset.pipelines.cli import run_cli

    tmp = tmp_path_factory.mktemp("geometry")
    with open(ROOT / "data" / "molecules" / "freesolv.csv") as f:
        (tmp / "fs.csv").write_text("".join(f.readlines()[:31]))
    cfg = tmp / "tiny_geometry.yaml"
    cfg.write_text(GEOMETRY_CONFIG.format(csv=tmp / "fs.csv", cache=tmp / "cache"))
    with contextlib.chdir(tmp):
        run_cli(["fit", "--config", str(cfg)])
    run = tmp / "runs" / "tiny_geometry" / "version_0"
    spec = importlib.util.spec_from_file_location("ship_predictors", ROOT / "scripts" / "ship_predictors.py")
    ship = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ship)
    ship.main(["freesolv", "--from-run", str(run), "--out", str(tmp / "models"), "--no-blend"])  # the model alone
    return run, pretrained(tmp / "models" / "freesolv"), cfg


def test_a_geometry_predictor_equals_the_model_through_the_data_module(geometry_run):
    """The packed 3-D predictor's values are the trained model's on the data module's own
    featurized (3-D) test molecules, and its card's numbers reproduce."""
    import torch
    import yaml

    from vecset.pipelines.molecules.data import MoleculeDataModule
    from vecset.pipelines.training.task import TaskModule

    run, p, _ = geometry_run
    assert p.featurizer.geometry and p.columns[-2:] == ["conformer", "error"]
    assert p.featurizer.charges and p.featurizer.surface and p.featurizer.nodes.dim == 45
    assert p.extra["conformers"] == 2 and p.featurizer.conformers == 1  # conformer 0 alone is embedded
    assert p.card["domain"]["test_without_conformer"] == 0 and p.card["domain"]["test_count"] == 3
    check_card(p)

    dm = MoleculeDataModule(**yaml.safe_load((run / "config.yaml").read_text())["data"]["init_args"])
    dm.setup("test")
    items = dm.splits["test"]
    assert "dist3d" in items[0] and items[0]["x"].shape[1] == 45 and items[0]["conformers3d"].shape[0] == 2
    model = TaskModule.load_from_checkpoint(run / "checkpoints" / p.card["checkpoint"], map_location="cpu",
                                            weights_only=True).eval()
    with torch.inference_mode():
        want = model.head.to_units(model(dm.collate(items)))[:, 0]
    rows = p.predict([it["smiles"] for it in items])
    assert [r["error"] for r in rows] == [""] * len(items) and all(r["conformer"] is True for r in rows)
    np.testing.assert_allclose([r["expt"] for r in rows], want.numpy(), rtol=0, atol=1e-5)


def test_a_geometry_predictor_flags_a_molecule_without_a_conformer(geometry_run):
    """A molecule RDKit cannot embed in 3-D is predicted from its 2-D graph, its row saying so
    (``conformer`` False), as ``vecset predict`` from the run's checkpoint predicts it."""
    run, p, cfg = geometry_run
    rows = p.predict(["CCO", UNEMBEDDABLE, "C", "not a smiles"])
    assert [r["conformer"] for r in rows] == [True, False, True, ""]  # methane: one atom, nothing to embed
    assert rows[1]["error"] == "" and math.isfinite(rows[1]["expt"])
    assert rows[3]["error"].startswith("invalid SMILES")
    rc, _, err = run_command(["--model", "freesolv", "--smiles", "CCO", UNEMBEDDABLE])  # the shipped 3-D one
    assert rc == 0 and ("1 of 2 molecules have no 3-D conformer (conformer: False; RDKit could not embed them, "
                        "predicted from the 2-D graph alone)") in err.splitlines()
    # the data module's path: vecset predict --ckpt_path with a predict_csv, the same values
    import contextlib

    from vecset.pipelines.cli import run_cli

    src = run.parents[2] / "new.csv"
    src.write_text(f"smiles\nCCO\n{UNEMBEDDABLE}\nC\n")
    with contextlib.chdir(run.parents[2]):
        run_cli(["predict", "--config", str(cfg), "--ckpt_path", str(run / "checkpoints" / p.card["checkpoint"]),
                 "--data.init_args.predict_csv", str(src), "--trainer.enable_progress_bar=false"])
    with open(run.parent / "version_1" / "predictions.csv") as f:
        preds = list(csv.DictReader(f))
    assert [r["smiles"] for r in preds] == ["CCO", UNEMBEDDABLE, "C"]
    np.testing.assert_allclose([float(r["expt"]) for r in preds], [r["expt"] for r in rows[:3]], rtol=0, atol=1e-5)


def test_a_bundle_without_the_geometry_key_is_2d(tmp_path):
    """Bundles packed before geometry have no ``geometry`` key (nor ``charges``, ``surface``): 2-D predictors
    (no conformer is embedded, no ``conformer`` column) and predict as before."""
    import shutil

    import torch

    src = models_dir() / "b3db"
    bundle = {k: v for k, v in torch.load(src / "model.pt", weights_only=True).items() if k != "members"}
    for key in ("geometry", "charges", "surface", "blend"):  # blend: the attention model alone (no peer.skops)
        bundle["predictor"].pop(key, None)
    torch.save(bundle, tmp_path / "model.pt")
    shutil.copy(src / "card.json", tmp_path / "card.json")
    p = pretrained(tmp_path)
    assert not p.featurizer.geometry and "geometry" not in p.featurizer.settings()
    assert not p.featurizer.charges and not p.featurizer.surface and p.featurizer.nodes.dim == 42
    assert p.columns == ["input", "prediction", "probability", "P(BBB-)", "P(BBB+)", "train_similarity",
                         "out_of_domain", "out_of_domain_reason", "error"]
    row = p.predict(["CCO"])[0]
    assert row["error"] == "" and "dist3d" not in p.prepare("CCO")


# -- issue 57: a str is one input, --out checked first, salts flagged, long words, exits, names, help --


def test_a_string_is_one_input_not_its_letters():
    rows = load("solubility").predict("CCO")
    assert len(rows) == 1 and rows[0]["input"] == "CCO" and rows[0]["error"] == ""
    assert rows[0]["logS"] == load("solubility").predict(["CCO"])[0]["logS"]
    words = load("g2p").predict("hello")
    assert [r["input"] for r in words] == ["hello"]


def test_as_frame_returns_a_dataframe_with_the_rows_columns():
    import pandas as pd

    p = load("freesolv")
    frame = p.predict(pd.DataFrame({"name": ["ethanol", "nothing"], "smiles": ["CCO", "C1CC"]}), as_frame=True)
    assert list(frame.columns) == ["name", "smiles", *p.columns[1:]]
    assert frame.loc[0, "expt"] == pytest.approx(p.predict("CCO")[0]["expt"], abs=1e-6)
    assert frame.loc[1, "error"].startswith("invalid SMILES 'C1CC'") and frame.loc[1, "name"] == "nothing"


def test_an_unwritable_out_is_refused_before_the_model_loads(tmp_path, monkeypatch):
    import sys

    module = sys.modules["vecset.pipelines.pretrained"]  # the package's ``pretrained`` is the function

    def never(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(module, "pretrained", never)
    (tmp_path / "file.txt").write_text("")
    out = tmp_path / "file.txt" / "p.csv"
    rc, stdout, err = run_command(["--model", "freesolv", "--smiles", "CCO", "--out", str(out)])
    assert rc == 2 and stdout == "" and err.splitlines() == [
        f"error: --out {out}: cannot write there ({tmp_path / 'file.txt'} is a file, not a folder)"]
    rc, _, err = run_command(["--model", "freesolv", "--smiles", "CCO", "--out", str(tmp_path)])
    assert rc == 2 and err.splitlines() == [f"error: --out {tmp_path}: a folder (give the CSV file's name)"]


def test_salts_charged_and_metal_molecules_are_out_of_domain_where_training_had_none():
    p = load("freesolv")  # FreeSolv: neutral organic molecules, one fragment each
    assert p.unseen_kinds == {"fragments", "charged", "metal"}
    rows = p.predict(["CC(=O)[O-].[Na+]", "C[N+](C)(C)C", "CCO"])
    assert rows[0]["out_of_domain"] is True and "2 fragments (a salt or mixture), which no training molecule has" \
        in rows[0]["out_of_domain_reason"] and "metal atom Na" in rows[0]["out_of_domain_reason"]
    assert rows[1]["out_of_domain"] is True and "net charge +1, which no training molecule has" \
        in rows[1]["out_of_domain_reason"]
    assert rows[2]["out_of_domain"] is False and rows[2]["out_of_domain_reason"] == ""
    # B3DB's training set holds salts, ions and metals: only the similarity decides there
    b3db = load("b3db")
    assert b3db.unseen_kinds == frozenset()
    row = b3db.predict("CC(=O)[O-].[Na+]")[0]
    assert row["out_of_domain"] is (row["train_similarity"] < b3db.threshold)


def test_a_word_longer_than_the_decoder_spells_is_not_finished():
    p = load("g2p")
    word = "pneumonoultramicroscopicsilicovolcanoconiosis"  # 45 letters; the decoder spells at most 32 phones
    rows = p.predict(["cat", word])
    assert rows[0]["finished"] is True and rows[1]["finished"] is False and rows[1]["error"] == ""
    assert p.notes(rows) == ["1 of 2 words are not finished (finished: False; longer than the 32 phones or letters "
                             "the model spells out: their pronunciation is likely cut short)"]


def test_nothing_predicted_exits_2_and_says_so():
    rc, out, err = run_command(["--model", "b3db", "--smiles", "xx", "yy"])
    assert rc == 2 and len(out.splitlines()) == 3  # the rows are still written, with their errors
    assert err.splitlines()[0].startswith("error: none of the 2 inputs could be predicted (their error column says "
                                          "why; the first: invalid SMILES 'xx'")


def test_a_shipped_name_is_matched_without_regard_to_case():
    rc, out, _ = run_command(["--model", "Solubility", "--smiles", "CCO"])
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert float(rows[0]["logS"]) == pytest.approx(load("solubility").predict("CCO")[0]["logS"], abs=1e-4)


def test_help_names_the_model_option_and_pack(capsys, monkeypatch):
    import sys

    from vecset.command import help_text, main

    monkeypatch.setattr(sys, "argv", ["vecset", "predict", "--help"])
    with pytest.raises(SystemExit):
        main()
    out = capsys.readouterr().out
    assert out.startswith("vecset predict --model NAME-or-DIR: Predict with a shipped model, a model folder or a run "
                          "folder") and "--ckpt_path" in out  # then LightningCLI's own predict help
    with pytest.raises(SystemExit), redirect_stdout(io.StringIO()) as text:
        command_main(["--model", "solubility", "--help"])
    assert "--smiles SMILES [SMILES ...]" in text.getvalue() and "NAME-or-DIR" in text.getvalue()
    assert "    pack              Write a run's best model as a model folder" in help_text()
