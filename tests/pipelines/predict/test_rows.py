"""``vecset predict``'s CSV rows: any task's (the input, the class and its probability, or a value
per target), molecules' (line, SMILES, std, invalid rows), graph nodes' and pronunciations'."""

from __future__ import annotations

import csv
import logging

import torch

from vecset.pipelines.data.synthetic import SyntheticSetDataModule
from vecset.pipelines.graphs.predictions import NodeRows
from vecset.pipelines.images.digits import DigitsDataModule
from vecset.pipelines.molecules.data import MoleculeDataModule
from vecset.pipelines.molecules.predictions import MoleculeRows
from vecset.pipelines.predict import Rows
from vecset.pipelines.text.predictions import PronunciationRows


def read(path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))


def test_rows_name_the_input_and_the_class_or_the_targets(tmp_path):
    rows = Rows(DigitsDataModule(), tmp_path)
    assert rows.rows_of([3, 7], {"label": [4, 9], "prob": [0.91, 0.5]}) == [
        {"input": "load_digits[3]", "prediction": "4", "probability": 0.91},
        {"input": "load_digits[7]", "prediction": "9", "probability": 0.5}]
    # a label per vector: space-separated; a regression: a column per target (value_<t> without names)
    labels = Rows(SyntheticSetDataModule(n_train=4, n_val=2, n_test=2), tmp_path)
    assert labels.rows_of([0], {"label": [[1, 0]], "prob": [[0.9, 0.25]]})[0]["probability"] == "0.900 0.250"
    mean = SyntheticSetDataModule(n_train=4, n_val=2, n_test=2, target="mean")
    assert Rows(mean, tmp_path).rows_of([5], {"value": [[0.5]]}) == [{"input": "5", "mean": 0.5}]
    mean.target_names = None
    assert Rows(mean, tmp_path).rows_of([5], {"value": [[0.5, 1.0]]}) == [{"input": "5", "value_0": 0.5,
                                                                            "value_1": 1.0}]
    rows.add([3], {"label": [4], "prob": [0.91]}, {})
    assert rows.close() == tmp_path / "predictions.csv" and read(tmp_path / "predictions.csv") == [
        {"input": "load_digits[3]", "prediction": "4", "probability": "0.91"}]


def test_molecule_rows_carry_the_std_in_target_units_and_the_invalid_rows(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("smiles,expt\n" + "".join(f"{'C' * (i + 1)}O,{-i}\n" for i in range(10)))
    dm = MoleculeDataModule(str(path), target_columns=["expt"])
    dm.setup("fit")
    ids = [it["id"] for it in dm.splits["test"]]
    rows = MoleculeRows(dm, tmp_path / "run")
    assert rows.rows_of(ids, {"value": [[-1.5]], "std": [[0.25]]}) == [
        {"line": dm.splits["test"][0]["line"], "smiles": dm.splits["test"][0]["smiles"], "expt": -1.5, "expt_std": 0.25}]
    assert "expt_std" not in rows.rows_of(ids, {"value": [[-1.5]]})[0]
    dm.invalid_predict = [{"line": 4, "smiles": "C1CC", "reason": "unclosed ring"}]
    rows.add(ids, {"value": [[-1.5]]}, {})
    rows.close()
    assert read(tmp_path / "run" / "invalid_rows.csv") == [{"line": "4", "smiles": "C1CC", "reason": "unclosed ring"}]
    assert [r["expt"] for r in read(tmp_path / "run" / "predictions.csv")] == ["-1.5"]


def test_pronunciations_warn_about_unfinished_words(tmp_path, caplog):
    class Words:  # what PronunciationRows reads of a CMUDictDataModule
        def describe(self, sid: int) -> str:
            return ["cat", "dog"][sid]

    rows = PronunciationRows(Words(), tmp_path)
    rows.add([0, 1], {"tokens": [["K", "AE", "T"], ["D"] * 5], "finished": [True, torch.tensor(False)]}, {})
    with caplog.at_level(logging.WARNING):
        rows.close()
    assert read(tmp_path / "predictions.csv") == [{"word": "cat", "pronunciation": "K AE T", "finished": "True"},
                                                  {"word": "dog", "pronunciation": "D D D D D", "finished": "False"}]
    assert "1 of 2 words reached max_len without <eos>" in caplog.text


def test_node_rows_name_each_node_and_its_split(tmp_path):
    from vecset.pipelines.graphs.data import GraphNodeDataModule

    dm = GraphNodeDataModule(seed=0, lap_pe_k=2)
    dm.setup("predict")
    n = len(dm.nodes)
    rows = NodeRows(dm, tmp_path).rows_of([0], {"label": [[1] * n], "prob": [[0.75] * n]})
    split_of = {node: k for k, v in dm.split_nodes.items() for node in v}
    assert [r["node"] for r in rows] == dm.nodes and all(r["split"] == split_of[r["node"]] for r in rows)
    assert rows[0]["prediction"] == dm.class_names[1] and rows[0]["probability"] == 0.75
