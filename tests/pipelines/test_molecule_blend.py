"""A molecule predictor blended with a descriptor model (``vecset pack --blend``,
pipelines/molecules/blend.py): the SVR is the benchmark's, the weight is chosen on validation,
the predictor returns the weighted mean of its two parts, and a peer file is read back only
with its own scikit-learn types."""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from molecule_run_helpers import GEOMETRY_CONFIG

from vecset.pipelines.molecules import blend as bl
from vecset.pipelines.predictor import PredictorError
from vecset.pipelines.pretrained import models_dir, pretrained

ROOT = Path(__file__).resolve().parents[2]
SMILES = ["CCO", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O", "CCCCCC", "OCC(O)CO", "Clc1ccccc1Cl", "CC(C)O",
          "c1ccncc1", "CCN(CC)CC", "O=C(O)CCC(=O)O", "CCOC(=O)C", "Cc1ccccc1"]


def descriptors(p, smiles: list[str]) -> np.ndarray:
    """The raw RDKit descriptors the predictor computes for the molecules (what the peer reads)."""
    return bl.descriptor_matrix([p.prepare(s) for s in smiles])


def test_the_svr_peer_is_the_benchmarks():
    """make_peer("svr") (a scikit-learn pipeline a model folder can hold) predicts what
    bench/molecule_peers.py's SVR predicts on its precomputed z-scores."""
    sys.path.insert(0, str(ROOT))
    from bench import molecule_peers as mp
    from vecset.encoders.graph import DescriptorScaler

    rng = np.random.default_rng(0)
    x = rng.normal(size=(90, 6))
    x[:, 2] = 3.0  # constant: dropped
    x[4, 1], x[7, 0] = np.nan, 1e30  # a descriptor RDKit could not compute, an outlier clipped at z 5
    y = 2 * x[:, 0] + np.nan_to_num(x[:, 1]) + rng.normal(0, 0.1, 90)
    keep = bl.non_constant(x[:60])
    scaler = DescriptorScaler().fit(x[:60][:, keep])
    m = {"classification": False, "kept": len(keep), "y_train": y[:60]}
    for part, sl in (("train", slice(0, 60)), ("val", slice(60, 75)), ("test", slice(75, 90))):
        m[f"z_{part}"] = np.stack([scaler.transform(r).numpy() for r in x[sl][:, keep]])
    point = {"C": 10.0, "gamma_x": 0.3, "epsilon": 0.1}
    want_val, want_test = mp.fit_predict("svr", point, m)
    model = bl.make_peer("svr", point, False, len(keep)).fit(x[:60], y[:60])
    np.testing.assert_allclose(model.predict(x[60:75]), want_val, rtol=0, atol=1e-9)
    np.testing.assert_allclose(model.predict(x[75:]), want_test, rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match="regression only"):
        bl.make_peer("svr", point, True, 3)


def test_the_weight_is_chosen_on_validation():
    truth = np.array([0.0, 1.0, 2.0, 3.0])
    noise = np.array([0.5, -0.5, 0.5, -0.5])
    assert bl.choose_weight(truth, truth + 1, truth, False) == (1.0, 0.0)  # the attention model is exact
    assert bl.choose_weight(truth + 1, truth, truth, False) == (0.0, 0.0)  # the peer is
    w, rmse = bl.choose_weight(truth + noise, truth - noise, truth, False)  # opposite errors cancel at 0.5
    assert w == 0.5 and rmse == pytest.approx(0.0)
    # classification: the ROC-AUC of the second class's blended probability. The peer ranks the
    # second molecule (class 0) above the third (class 1); the blend ranks them right from
    # w > 1/3 on (0.4 w + 0.7 (1 - w) < 0.6), and the first of the tied weights is taken
    labels = np.array([0, 0, 1, 1])
    attention = np.array([[0.9, 0.1], [0.6, 0.4], [0.4, 0.6], [0.1, 0.9]])
    peer = np.array([[0.9, 0.1], [0.3, 0.7], [0.4, 0.6], [0.1, 0.9]])
    assert bl.metric(True, labels, peer) == 0.75
    assert bl.choose_weight(attention, peer, labels, True) == (0.35, 1.0)


def test_a_peer_file_is_read_back_with_its_predictions(tmp_path):
    x = np.random.default_rng(1).normal(size=(50, 4))
    y = x[:, 0]
    for peer, point in (("hgb", {"learning_rate": 0.1, "max_leaf_nodes": 15, "l2_regularization": 0.0}),
                        ("forest", {"max_features": 1.0}), ("svr", {"C": 1.0, "gamma_x": 1.0, "epsilon": 0.1})):
        model = bl.make_peer(peer, point, False, 4).fit(x, y)
        path = bl.save_peer(model, tmp_path)
        assert path.name == bl.PEER_FILE
        np.testing.assert_array_equal(bl.load_peer(path).predict(x), model.predict(x))


class NotAPeer:
    """A type no peer file holds."""


def test_a_peer_file_holding_other_types_is_refused(tmp_path):
    import skops.io as sio

    sio.dump({"x": NotAPeer()}, tmp_path / bl.PEER_FILE)
    with pytest.raises(PredictorError, match="holds types other than scikit-learn's ensembles"):
        bl.load_peer(tmp_path / bl.PEER_FILE)
    with pytest.raises(PredictorError, match="no such file"):
        bl.load_peer(tmp_path / "gone" / bl.PEER_FILE)


def single_member(tmp_path: Path, name: str, peer=None, weight: float = 1.0) -> Path:
    """The shipped ``name`` model's first member alone, or blended with ``peer`` at ``weight``."""
    src = models_dir() / name
    bundle = {k: v for k, v in torch.load(src / "model.pt", weights_only=True).items() if k != "members"}
    bundle["predictor"].pop("blend", None)
    folder = tmp_path / f"{name}_{'blend' if peer is not None else 'single'}"
    folder.mkdir()
    if peer is not None:
        bundle["predictor"]["blend"] = {"peer": "test", "setting": {}, "weight": weight}
        bl.save_peer(peer, folder)
    torch.save(bundle, folder / "model.pt")
    shutil.copy(src / "card.json", folder / "card.json")
    return folder


def test_a_blended_regression_predictor_is_the_weighted_mean_of_its_parts(tmp_path):
    alone = pretrained(single_member(tmp_path, "freesolv"))
    x = descriptors(alone, SMILES)
    peer = bl.make_peer("forest", {"max_features": 1.0}, False).fit(x, np.arange(len(SMILES), dtype=float))
    p = pretrained(single_member(tmp_path, "freesolv", peer, 0.3))
    assert p.columns == alone.columns  # the same columns: the value is the blend's
    rows, base = p.predict(SMILES + ["not a smiles"]), alone.predict(SMILES)
    want = 0.3 * np.array([r["expt"] for r in base]) + 0.7 * peer.predict(x)
    np.testing.assert_allclose([r["expt"] for r in rows[:-1]], want, rtol=0, atol=1e-4)
    assert rows[-1]["error"] and rows[-1]["expt"] == ""  # a bad SMILES is still an error row


def test_a_blended_classifier_blends_the_class_probabilities(tmp_path):
    alone = pretrained(single_member(tmp_path, "b3db"))
    x = descriptors(alone, SMILES)
    labels = np.array([i % 2 for i in range(len(SMILES))])
    peer = bl.make_peer("hgb", {"learning_rate": 0.1, "max_leaf_nodes": 15, "l2_regularization": 0.0}, True)
    peer.fit(x, labels)
    p = pretrained(single_member(tmp_path, "b3db", peer, 0.6))
    rows, base = p.predict(SMILES), alone.predict(SMILES)
    want = 0.6 * np.array([[r[f"P({c})"] for c in alone.classes] for r in base]) + 0.4 * peer.predict_proba(x)
    got = np.array([[r[f"P({c})"] for c in p.classes] for r in rows])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    assert [r["prediction"] for r in rows] == [p.classes[k] for k in want.argmax(1)]


def test_a_blend_without_its_peer_file_is_refused(tmp_path):
    folder = single_member(tmp_path, "freesolv", bl.make_peer("forest", {"max_features": 1.0}, False)
                           .fit(np.zeros((3, 2)), np.zeros(3)), 0.5)
    (folder / bl.PEER_FILE).unlink()
    with pytest.raises(PredictorError, match=r"peer\.skops: no such file"):
        pretrained(folder)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A 2-step ``vecset fit`` of the tiny 3-D config on 80 FreeSolv molecules (descriptors in the head)."""
    from vecset.pipelines.cli import run_cli

    tmp = tmp_path_factory.mktemp("blend")
    with open(ROOT / "data" / "molecules" / "freesolv.csv") as f:
        (tmp / "fs.csv").write_text("".join(f.readlines()[:81]))
    (tmp / "tiny.yaml").write_text(GEOMETRY_CONFIG.format(csv=tmp / "fs.csv", cache=tmp / "cache"))
    with contextlib.chdir(tmp):
        run_cli(["fit", "--config", str(tmp / "tiny.yaml")])
    return tmp / "runs" / "tiny" / "version_0"


def test_pack_blend_chooses_on_validation_and_writes_the_peer_beside_the_model(tiny_run, tmp_path):
    from vecset.pipelines.molecules.data import MoleculeDataModule
    from vecset.pipelines.pack import load_run, main, pack, run_config

    with contextlib.chdir(tiny_run.parents[2]):
        card = pack([tiny_run], tmp_path / "m", blend="svr")
        dm = MoleculeDataModule(**run_config(tiny_run)["data"]["init_args"])
        dm.setup("fit")
        alone = load_run(tiny_run)
    b = card["blend"]
    assert b["peer"] == "svr" and b["weight"] in bl.WEIGHTS and b["molecules"] == {"train": 64, "val": 8}
    assert len(b["grid"]) == 120 and b["validation"]["peer"] == min(g["val"] for g in b["grid"])
    # the card's validation numbers, recomputed from the folder's two parts
    val = dm.splits["val"]
    y = np.array([float(it["y"][0]) for it in val])
    peer = bl.load_peer(tmp_path / "m" / bl.PEER_FILE)
    a = np.array([r["expt"] for r in alone.predict([it["smiles"] for it in val])])
    q = peer.predict(bl.descriptor_matrix(val))
    assert b["validation"]["attention"] == pytest.approx(bl.metric(False, y, a), abs=1e-6)
    assert b["validation"]["blend"] == pytest.approx(bl.metric(False, y, bl.mix(b["weight"], a, q)), abs=1e-6)
    assert b["validation"]["blend"] <= min(b["validation"]["attention"], b["validation"]["peer"]) + 1e-9
    p = pretrained(tmp_path / "m")
    rows = p.predict([it["smiles"] for it in val])
    np.testing.assert_allclose([r["expt"] for r in rows], bl.mix(b["weight"], a, q), rtol=0, atol=1e-4)
    assert card["size_bytes"] == sum((tmp_path / "m" / f).stat().st_size for f in ("model.pt", bl.PEER_FILE))
    assert "Blended: " in (tmp_path / "m" / "README.md").read_text()
    assert json.loads((tmp_path / "m" / "card.json").read_text())["blend"]["weight"] == b["weight"]
    # packed again without a blend: the old peer file goes, the predictor is the attention model's
    with contextlib.chdir(tiny_run.parents[2]):
        main([str(tiny_run), str(tmp_path / "m")])
    assert not (tmp_path / "m" / bl.PEER_FILE).exists() and pretrained(tmp_path / "m").peer is None


def test_pack_blend_errors_name_the_option(tiny_run, tmp_path, capsys):
    from vecset.pipelines.pack import main

    with contextlib.chdir(tiny_run.parents[2]), pytest.raises(SystemExit) as e:
        main([str(tiny_run), str(tmp_path / "m"), "--blend", "knn"])
    assert e.value.code == 2 and "--blend: invalid choice: 'knn'" in capsys.readouterr().err


def test_a_job_without_a_blend_says_so():
    from vecset.pipelines.images.predictor import ImagePredictor

    image = object.__new__(ImagePredictor)  # no model needed: the refusal comes first
    assert image.peer is None
    with pytest.raises(PredictorError, match="--blend: ImagePredictor has no blend"):
        image.fit_blend({}, "svr")
