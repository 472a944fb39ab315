"""``vecset pack``'s card names the run's data files as the data modules found them: a run on the
shipped data (``data/...`` relative, read from the package where the working directory has no such
path: ``vecset.shipped.data_file``) gets its files and sha256 from any folder (issue 60)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from vecset.pipelines.pack import data_files, folder_sha256

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_data_is_hashed_from_another_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no data/ here: the shipped copy is what the run read
    csv = ROOT / "data" / "molecules" / "solubility.csv"
    config = {"data": {"init_args": {"csv_path": "data/molecules/solubility.csv", "cache_dir": "cache",
                                     "split": "random", "phone_set": "festival"}}}
    assert data_files(config) == [{"argument": "csv_path", "path": "data/molecules/solubility.csv",
                                   "sha256": hashlib.sha256(csv.read_bytes()).hexdigest(),
                                   "bytes": csv.stat().st_size}]


def test_a_shipped_folder_is_hashed_whole(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (card,) = data_files({"data": {"init_args": {"root": "data/conllu"}}})
    digest, count, size = folder_sha256(ROOT / "data" / "conllu")
    assert card == {"argument": "root", "path": "data/conllu", "sha256": digest, "bytes": size, "files": count}
    assert count == 1


def test_a_path_missing_everywhere_is_left_out(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert data_files({"data": {"init_args": {"csv_path": "data/molecules/not_there.csv"}}}) == []


def test_the_card_names_the_trunk_a_run_started_from(tmp_path, monkeypatch):
    """``started_from``: the shipped trunk a config's ``init_from`` names, found from any folder, with
    its sha256 and the pretraining record ``scripts/export_trunk.py`` wrote into it; the card's
    Markdown says it in one line; a run from scratch says so."""
    from vecset.pipelines.pack import started_from, warm_start_lines

    monkeypatch.chdir(tmp_path)
    trunk = ROOT / "data" / "molecules" / "pretrained_moses_500k.ckpt"
    start = started_from({"model": {"init_args": {"init_from": "data/molecules/pretrained_moses_500k.ckpt",
                                                  "init_parts": ["encoder", "backbone"]}}})
    assert start["sha256"] == hashlib.sha256(trunk.read_bytes()).hexdigest()
    assert start["init_parts"] == ["encoder", "backbone"]
    pre = start["pretraining"]
    assert (pre["data"], pre["data_rows"], pre["global_step"]) == ("moses_500k.csv", 500000, 7735)
    assert pre["data_sha256"].startswith("fe6ad0a1") and "MIT" in pre["licence"]
    line = warm_start_lines(start)[0]
    assert line.startswith("Started from `data/molecules/pretrained_moses_500k.ckpt` (encoder, backbone; sha256 `")
    assert "pretrained on `moses_500k.csv` (500000 rows" in line
    assert started_from({"model": {"init_args": {"lr": 0.001}}}) is None
    assert warm_start_lines(None)[0] == "Trained from scratch (no warm start)."
    gone = started_from({"model": {"init_args": {"init_from": "data/molecules/gone.ckpt"}}})
    assert gone == {"init_from": "data/molecules/gone.ckpt", "init_parts": None, "sha256": None, "pretraining": None}
