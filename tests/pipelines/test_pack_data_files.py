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
