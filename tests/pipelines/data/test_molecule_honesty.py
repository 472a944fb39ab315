"""MoleculeDataModule says what its data is: too few rows for the split is one line naming the
file, the row count and the split sizes; test molecules also in train and one molecule with two
targets are warned about, counted and listed in ``duplicates.csv`` (canonical SMILES); a
multi-task run writes each task's ``skipped_rows.csv`` into the task's folder."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import pytest
import pytorch_lightning as pl

from vecset.pipelines import MoleculeDataModule, MultiTaskDataModule
from vecset.pipelines.molecules.options import MoleculeFeatures, MoleculeSplit

# 28 distinct small molecules (canonical SMILES differ)
MOLS = ["C", "CC", "CCC", "CCCC", "CCCCC", "CO", "CCO", "CCCO", "CCCCO", "CN", "CCN", "CCCN", "CCCCN",
        "CCl", "CCCl", "CCCCl", "CF", "CCF", "CCCF", "CBr", "CCBr", "CCCBr", "c1ccccc1", "Cc1ccccc1",
        "Oc1ccccc1", "Nc1ccccc1", "Clc1ccccc1", "Fc1ccccc1"]
# the same molecules spelled otherwise (RDKit's canonical SMILES makes them equal)
OTHER = {"CCO": "OCC", "CCCO": "OCCC", "CCN": "NCC", "CCCN": "NCCC", "CCCl": "ClCC"}


def write(path: Path, rows: list[list]) -> str:
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    return str(path)


def trainer(root: Path) -> pl.Trainer:
    """A Trainer whose ``log_dir`` is ``root`` (no logger), for the files a data module writes."""
    return pl.Trainer(default_root_dir=str(root), accelerator="cpu", logger=False, enable_progress_bar=False,
                      enable_model_summary=False, enable_checkpointing=False)


def test_one_row_is_an_error_naming_the_file_the_row_count_and_the_split_sizes(tmp_path):
    path = write(tmp_path / "one.csv", [["smiles", "expt"], ["CCO", 1.0]])
    dm = MoleculeDataModule(path, target_columns=["expt"], cache=False, features=MoleculeFeatures(descriptors=True))
    with pytest.raises(ValueError) as e:
        dm.setup("fit")
    first = str(e.value).splitlines()[0]
    assert first == (f"{path}: too few rows for split.method='random': 1 usable (of 1 in the file) give train 0, val 0, "
                     "test 1; every part needs at least one molecule, and the random split (80/10/10, rounded "
                     "down) needs at least 10 usable rows")


def test_a_column_split_without_test_rows_names_the_column(tmp_path):
    path = write(tmp_path / "c.csv", [["smiles", "y", "split"], *([s, i, "train"] for i, s in enumerate(MOLS[:12]))])
    dm = MoleculeDataModule(path, target_columns=["y"], cache=False, split=MoleculeSplit(method="column"))
    with pytest.raises(ValueError, match=r"c.csv: too few rows for split.method='column': 12 usable \(of 12 in the file\) "
                                         r"give train 11, val 1, test 0; .*column 'split' needs train and test rows"):
        dm.setup("fit")


@pytest.fixture
def leaky(tmp_path) -> str:
    """18 test molecules, 5 of them (spelled otherwise) also in train; CCCC twice in train with
    two targets (lines 2 and 3); 2 validation molecules."""
    test = MOLS[5:23]
    rows = [["CCCC", 1.5, "train"], ["CCCC", 2.5, "train"]]
    rows += [[s, float(i), "train"] for i, s in enumerate(MOLS[:3] + MOLS[23:])]
    rows += [[OTHER[s], float(10 + i), "train"] for i, s in enumerate(test) if s in OTHER]  # the test rows' targets
    rows += [[s, float(10 + i), "test"] for i, s in enumerate(test)]
    rows += [["CCCCCC", 0.0, "val"], ["CCCCCCO", 1.0, "val"]]
    return write(tmp_path / "leaky.csv", [["smiles", "y", "split"], *rows])


def test_test_molecules_in_train_and_two_targets_are_warned_counted_and_listed(leaky, tmp_path, caplog):
    dm = MoleculeDataModule(leaky, target_columns=["y"], cache=False, split=MoleculeSplit(method="column"))
    dm.trainer = trainer(tmp_path / "run")
    with caplog.at_level(logging.WARNING):
        dm.setup("fit")
    assert len(dm.splits["test"]) == 18
    assert dm.duplicates == {"test in train": 5, "val in train": 0, "different targets": 1}
    msgs = [r.getMessage() for r in caplog.records]
    (shared,) = [m for m in msgs if "also in the training split" in m]
    assert shared == (f"{leaky}: 5 of 18 test molecules are also in the training split (same canonical SMILES: "
                      "their scores are not on unseen molecules): 'CCCN' (test line 23, train line 15); 'CCCO' "
                      "(test line 19, train line 13); 'CCCl' (test line 26, train line 16); ...")
    (two,) = [m for m in msgs if "different targets" in m]
    assert two == f"{leaky}: 1 molecules are in several rows with different targets (same canonical SMILES): " \
                  "'CCCC': line 2 1.5, line 3 2.5"
    with open(tmp_path / "run" / "duplicates.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["check", "smiles", "line", "split", "target"]
    assert sum(r["check"] == "test in train" for r in rows) == 10  # 5 molecules, a test and a train row each
    assert [(r["line"], r["target"]) for r in rows if r["check"] == "different targets"] == [("2", "1.5"), ("3", "2.5")]


def test_the_duplicate_check_compares_the_readers_canonical_smiles_without_parsing_again(leaky, monkeypatch):
    """Each molecule is parsed once, by the reader: the duplicate check reads the canonical SMILES
    the featurized items carry (``canonical_smiles``, a second RDKit parse, is not called)."""
    import vecset.encoders.graph.identity as identity
    import vecset.pipelines.molecules.data as data

    def parse_again(smiles: str) -> str:
        raise AssertionError(f"{smiles!r} parsed a second time")

    monkeypatch.setattr(data, "canonical_smiles", parse_again)
    monkeypatch.setattr(identity, "canonical_smiles", parse_again)
    dm = MoleculeDataModule(leaky, target_columns=["y"], cache=False, split=MoleculeSplit(method="column"))
    dm.setup("fit")
    assert dm.duplicates == {"test in train": 5, "val in train": 0, "different targets": 1}
    assert sorted(set(dm.item_keys("test")) & set(dm.item_keys("train"))) == ["CCCN", "CCCO", "CCCl", "CCN", "CCO"]


def test_a_multitask_run_writes_each_tasks_skipped_rows_and_duplicates_in_its_folder(leaky, tmp_path):
    bad = write(tmp_path / "bad.csv", [["smiles", "y"], *([s, 1.0] for s in MOLS[:12]), ["not a smiles", 2.0],
                                       ["CCO", ""]])
    data = MultiTaskDataModule({
        "leaky": MoleculeDataModule(leaky, target_columns=["y"], cache=False, split=MoleculeSplit(method="column")),
        "bad": MoleculeDataModule(bad, target_columns=["y"], cache=False)})
    data.trainer = trainer(tmp_path / "run")
    data.setup("fit")
    with open(tmp_path / "run" / "bad" / "skipped_rows.csv") as f:
        assert [(r["line"], r["smiles"]) for r in csv.DictReader(f)] == [("14", "not a smiles"), ("15", "CCO")]
    assert (tmp_path / "run" / "leaky" / "duplicates.csv").exists()
    assert not (tmp_path / "run" / "skipped_rows.csv").exists()


def test_test_molecules_in_the_warm_starts_pretraining_set_are_noted(leaky, tmp_path, caplog):
    """A fine-tuning run from a checkpoint that names its pretraining data (as the shipped
    ``pretrained_moses_10k.ckpt`` does) says which test molecules that data holds."""
    import torch

    from vecset.backbone import Backbone
    from vecset.encoders import GraphEncoder
    from vecset.heads import SequenceHead
    from vecset.pipelines import TaskModule

    def model(**kw) -> TaskModule:
        return TaskModule(GraphEncoder(d_model=8, node_dim=42, heads=2), Backbone(8, 1, 2),
                          SequenceHead(8, 1, task="regression"), **kw)

    pre = write(tmp_path / "pre.csv", [["smiles"], ["OCCCC"], ["NCCCC"], ["CCCCCCCC"]])  # 2 test molecules
    ckpt = tmp_path / "pre.ckpt"
    torch.save({"state_dict": model().state_dict(), "pretraining": {"data": pre}}, ckpt)
    fine = model(init_from=str(ckpt), init_parts=["encoder", "backbone"])
    dm = MoleculeDataModule(leaky, target_columns=["y"], cache=False, split=MoleculeSplit(method="column"))
    trainer = pl.Trainer(default_root_dir=str(tmp_path), accelerator="cpu", logger=False, max_steps=1,
                         limit_val_batches=0, enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False)
    with caplog.at_level(logging.WARNING):
        trainer.fit(fine, dm)
    (msg,) = [r.getMessage() for r in caplog.records if "pretrained on" in r.getMessage()]
    assert msg == (f"2 of 18 test items are in the data the warm start's model was pretrained on ({pre}; their "
                   "structure, not their targets, was seen before the test): CCCCN, CCCCO")


def test_a_pretraining_runs_checkpoints_name_its_data(tmp_path):
    """Lightning saves the data module's ``state_dict`` in every checkpoint: a pretraining run's
    ``last.ckpt`` names its molecules, which ``pretrained_on`` reads back."""
    import torch

    from vecset.pipelines.molecules.pretrain import MoleculePretrainDataModule
    from vecset.pipelines.training.warm_start import pretrained_on

    dm = MoleculePretrainDataModule("data/molecules/moses_10k.csv")
    ckpt = tmp_path / "last.ckpt"
    torch.save({"state_dict": {}, type(dm).__qualname__: dm.state_dict()}, ckpt)
    assert pretrained_on(str(ckpt)) == "data/molecules/moses_10k.csv"
    torch.save({"state_dict": {}}, ckpt)
    assert pretrained_on(str(ckpt)) is None
