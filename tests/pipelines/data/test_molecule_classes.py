"""MoleculeDataModule classification (declared classes, label errors) and the seeded scaffold split."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import torch
from rdkit.Chem.Scaffolds import MurckoScaffold

from vecset.pipelines.molecules.data import MoleculeDataModule
from vecset.pipelines.molecules.options import MoleculeFeatures, MoleculeSplit
from vecset.pipelines.molecules.splits import scaffold_split

RINGS = ["c1ccccc1", "C1CCCCC1", "c1ccncc1", "C1CCOC1", "C1CC1", "c1ccsc1", "C1CCNCC1", "c1ccoc1",
         "C1CCCC1", "c1cnccn1"]
SUBST = ["C", "O", "N", "Cl", "F", "CC"]


def molecules() -> list[str]:
    """60 molecules, 10 scaffolds of 6."""
    return [f"{s}{ring}" for ring in RINGS for s in SUBST]


def write(path: Path, rows: list[list]) -> Path:
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    return path


def labelled_csv(tmp_path: Path, labels: list[str]) -> Path:
    return write(tmp_path / "bbb.csv", [["smiles", "label"], *([s, y] for s, y in zip(molecules(), labels, strict=True))])


def test_labels_become_class_indices_and_empty_ones_are_skipped(tmp_path):
    labels = ["BBB+" if i % 3 else "BBB-" for i in range(60)]
    labels[4] = ""  # line 6
    dm = MoleculeDataModule(str(labelled_csv(tmp_path, labels)), label_column="label", classes=["BBB-", "BBB+"])
    dm.setup("fit")
    assert dm.class_names == ["BBB-", "BBB+"] and dm.num_classes == 2
    assert [(s["line"], s["reason"]) for s in dm.skipped] == [(6, "missing class label")]
    by_line = {it["line"]: int(it["y"]) for it in dm.items}
    assert by_line[2] == 0 and by_line[3] == 1  # rows 0 (BBB-) and 1 (BBB+)
    assert sum(dm.class_balance()[k]["BBB+"] for k in ("train", "val", "test")) == sum(y == "BBB+" for y in labels)
    batch = dm.collate(dm.splits["train"][:4])
    assert batch["y"].dtype == torch.long and batch["y"].shape == (4,)


def test_labels_outside_the_declared_classes_are_an_error_listing_them(tmp_path):
    labels = ["BBB+"] * 60
    labels[2], labels[9], labels[10] = "bbb+", "?", "?"
    dm = MoleculeDataModule(str(labelled_csv(tmp_path, labels)), label_column="label", classes=["BBB-", "BBB+"])
    with pytest.raises(ValueError, match=r"bbb\.csv: column 'label' holds values other than the declared classes "
                       r"\['BBB-', 'BBB\+'\]: '\?' \(2 rows, lines 11, 12\); 'bbb\+' \(1 rows, line 4\)"):
        dm.setup("fit")


def test_classes_must_be_declared_and_regression_targets_not_mixed_in():
    with pytest.raises(ValueError, match="needs classes"):
        MoleculeDataModule("x.csv", label_column="label")
    with pytest.raises(ValueError, match="not both"):
        MoleculeDataModule("x.csv", target_columns=["y"], label_column="label", classes=["a", "b"])


def scaffolds(smiles, idx):
    return {MurckoScaffold.MurckoScaffoldSmiles(smiles=smiles[i]) for i in idx}


def test_seeded_scaffold_split_keeps_groups_whole_and_depends_on_the_seed():
    smi = molecules()
    a, b, c = scaffold_split(smi, seed=0), scaffold_split(smi, seed=0), scaffold_split(smi, seed=3)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not all(np.array_equal(a[k], c[k]) for k in a)
    for split in (a, c):
        assert sorted(np.concatenate(list(split.values())).tolist()) == list(range(60))
        parts = [scaffolds(smi, split[k]) for k in ("train", "val", "test")]
        assert not parts[0] & parts[1] and not parts[0] & parts[2] and not parts[1] & parts[2]
        assert [len(split[k]) for k in ("train", "val", "test")] == [48, 6, 6]


def test_a_scaffold_split_with_an_empty_part_is_an_error(tmp_path):
    one_scaffold = ["c1ccccc1" + s for s in SUBST]  # a single group cannot be divided
    with pytest.raises(ValueError, match=r"6 molecules \(1 scaffold groups, largest 6\): the train and val part\(s\)"):
        scaffold_split(one_scaffold, seed=0)
    # ten groups of 6 with 0.95 to train: nothing is left for test
    with pytest.raises(ValueError, match=r"the test part\(s\) got no molecules"):
        scaffold_split(molecules(), fractions=(0.9, 0.1), seed=0)
    path = labelled_csv(tmp_path, ["BBB+"] * 60)
    rows = list(csv.reader(open(path)))[:7]
    write(path, [rows[0]] + [["c1ccccc1" + s, "BBB+"] for s in SUBST])
    dm = MoleculeDataModule(str(path), label_column="label", classes=["BBB-", "BBB+"], split=MoleculeSplit(method="scaffold_random"))
    with pytest.raises(ValueError, match=r"bbb\.csv: scaffold split of 6 molecules"):
        dm.setup("fit")


def test_a_second_setup_reads_the_featurized_molecules_from_the_cache(tmp_path, monkeypatch):
    """What the ensemble relies on: data modules of the same file and settings featurize once
    (the first writes the feature cache, the next read it), other settings featurize anew, and
    no two modules share an item."""
    import vecset.encoders.graph.reading as reading

    calls = []
    real = reading.graph_tensors
    monkeypatch.setattr(reading, "graph_tensors", lambda *a, **k: calls.append(1) or real(*a, **k))
    rows = [["smiles", "y"], *([m, i % 3 - 1.0] for i, m in enumerate(molecules())), ["C1CC", 0.0]]
    path = write(tmp_path / "m.csv", rows)
    make = lambda **kw: MoleculeDataModule(str(path), target_columns=["y"], **kw)  # noqa: E731
    desc = MoleculeFeatures(descriptors=True)
    make(cache=False, features=desc).setup("fit")
    make(cache=False, features=desc).setup("fit")
    assert len(calls) == 120  # without the cache every setup featurizes
    first = make(features=desc)
    first.setup("fit")
    assert len(calls) == 180 and len(first.skipped) == 1  # the unclosed ring is rejected
    again = make(features=desc, split=MoleculeSplit(seed=1))
    again.setup("fit")
    assert len(calls) == 180 and again.skipped == first.skipped  # every molecule, and the rejection, from the cache
    make(features=MoleculeFeatures(descriptors=True, max_dist=4)).setup("fit")
    assert len(calls) == 240  # other settings featurize anew
    a, b = (sorted(m.items, key=lambda it: it["id"]) for m in (first, again))
    for x, y in zip(a, b, strict=True):
        assert x is not y and torch.equal(x["dist"], y["dist"]) and np.array_equal(x["raw_desc"], y["raw_desc"])
    a[0]["x"][0, 0] = float("nan")  # a change to one module's molecule reaches no other's
    assert not torch.isnan(b[0]["x"]).any()
    # each module normalizes its descriptors with its own training split's statistics
    assert not all(torch.equal(x["features"], y["features"]) for x, y in zip(a, b, strict=True))


ROOT = Path(__file__).resolve().parents[3]
B3DB_SKIPPED = [49, 1460, 1525, 1941, 4484, 4499, 4742, 4744, 4865, 4882, 5036, 5045, 5281, 6099, 6101, 6434,
                6469, 7324, 7331, 7363, 7739]  # the 21 rows RDKit rejects or that have > 100 heavy atoms


def b3db_slice(tmp_path: Path) -> Path:
    """data/molecules/b3db.csv's 21 unusable rows and every 130th other row (60 molecules)."""
    lines = (ROOT / "data" / "molecules" / "b3db.csv").read_text().splitlines(keepends=True)
    keep = [n for n in range(2, len(lines) + 1) if n in B3DB_SKIPPED or n % 130 == 0]
    path = tmp_path / "b3db_slice.csv"
    path.write_text(lines[0] + "".join(lines[n - 1] for n in keep))
    return path


def test_skipped_rows_are_counted_with_the_first_few_on_the_console(tmp_path, caplog):
    """B3DB's 21 skipped SMILES (up to 383 characters each) made one 6.3 KB log line."""
    import logging

    dm = MoleculeDataModule(str(b3db_slice(tmp_path)), label_column="label", classes=["BBB-", "BBB+"])
    with caplog.at_level(logging.WARNING):
        dm.setup("fit")
    assert len(dm.skipped) == 21
    (msg,) = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(msg) < 600, len(msg)
    assert f"b3db_slice.csv: skipped 21 of {21 + len(dm.items)} rows (line 2 " in msg
    assert msg.count("line ") == 3 and "127 heavy atoms, more than max_atoms=100" in msg and "; ...)" in msg
    assert msg.endswith("all 21: MoleculeDataModule.skipped (set up without a Trainer: no run directory)")


def test_skipped_rows_go_to_the_run_directory(tmp_path, monkeypatch, caplog):
    import logging

    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "slice.yaml"
    cfg.write_text(f"""
trainer: {{max_epochs: 1, accelerator: cpu, devices: 1, enable_progress_bar: false, enable_model_summary: false}}
model:
  class_path: vecset.pipelines.TaskModule
  init_args:
    encoder: {{class_path: vecset.encoders.GraphEncoder, init_args: {{d_model: 8, node_dim: 42, heads: 2}}}}
    backbone: {{class_path: vecset.backbone.Backbone, init_args: {{d_model: 8, depth: 1, heads: 2}}}}
    head: {{class_path: vecset.heads.SequenceHead, init_args: {{d_model: 8, num_outputs: 2}}}}
data:
  class_path: vecset.pipelines.MoleculeDataModule
  init_args: {{csv_path: {b3db_slice(tmp_path)}, label_column: label, classes: [BBB-, BBB+]}}
""")
    with caplog.at_level(logging.WARNING):
        run_cli(["fit", "--config", str(cfg), "--plots=false"])
    path = tmp_path / "runs" / "slice" / "version_0" / "skipped_rows.csv"
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 21 and list(rows[0]) == ["line", "smiles", "reason"]
    assert rows[0]["reason"] == "127 heavy atoms, more than max_atoms=100" and len(rows[0]["smiles"]) == 300
    assert any(r.getMessage().endswith("all 21: runs/slice/version_0/skipped_rows.csv") for r in caplog.records)
