"""The multi-task leakage check (pipelines/data/overlap.py) on tiny crafted overlaps: a test
molecule in another task's training split (another label) is counted, under another spelling
too; in the training split of a task with the same label (one file, two splits) it is an error."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from vecset.encoders.graph import canonical_smiles
from vecset.pipelines import MoleculeDataModule, MultiTaskDataModule
from vecset.pipelines.data.overlap import LabelLeakError, overlap_with_test
from vecset.pipelines.molecules.options import MoleculeSplit


def write(path: Path, rows: list[list]) -> str:
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    return str(path)


def module(path: str, target: str, split_column: str = "split") -> MoleculeDataModule:
    return MoleculeDataModule(path, target_columns=[target], cache_dir=str(Path(path).parent / "cache"), split=MoleculeSplit(method="column", column=split_column))


@pytest.fixture
def files(tmp_path):
    # a: test CCO and c1ccccc1; its own train holds c1ccccc1 again (the data's own duplicate);
    # split2 puts CCO (and the first benzene row) into train: the same file and column, another split
    a = write(tmp_path / "a.csv", [["smiles", "y", "w", "split", "split2"],
                                   ["CCO", 1, 0, "test", "train"], ["c1ccccc1", 2, 0, "test", "test"],
                                   ["c1ccccc1", 2.1, 0, "train", "train"], ["CCC", 3, 0, "train", "test"],
                                   ["CCN", 4, 0, "val", "val"]])
    # b: OCC (CCO spelled another way) in train, with b's own label
    b = write(tmp_path / "b.csv", [["smiles", "z", "split"], ["OCC", 9, "train"], ["CCCl", 8, "train"],
                                   ["CN", 7, "val"], ["CCCC", 6, "test"]])
    return a, b


def test_test_molecules_in_another_tasks_training_split_are_counted(files):
    a, b = files
    tasks = {"a": module(a, "y"), "b": module(b, "z")}
    for dm in tasks.values():
        dm.setup("fit")
    pretraining = [canonical_smiles(s) for s in ("OCC", "CCCC", "CCBr")]  # extra sets give canonical keys
    counts = overlap_with_test(tasks, {"pretraining": pretraining})
    assert counts == {"a": {"test": 2, "own train": 1, "b train": 1, "pretraining": 1},
                      "b": {"test": 1, "own train": 0, "a train": 0, "pretraining": 1}}


def test_the_same_label_in_another_tasks_training_split_is_refused(files):
    a, _ = files
    dm = MultiTaskDataModule({"a": module(a, "y"), "a_again": module(a, "y", split_column="split2")})
    with pytest.raises(LabelLeakError, match=r"task 'a': 2 of its test items are in the training split of task "
                                             r"'a_again', which has the same label \(a.csv sha256 \w+, y\).*CCO"):
        dm.setup("fit")


def test_another_target_column_of_the_same_file_is_another_label(files):
    a, _ = files
    dm = MultiTaskDataModule({"a": module(a, "y"), "w": module(a, "w", split_column="split2")})
    dm.setup("fit")
    assert dm.test_overlap["a"] == {"test": 2, "own train": 1, "w train": 2}
