"""The molecule reader (encoders/graph/reading.py), its feature cache, the descriptor scaler,
scaffold groups, and the hand-over check of the graph encoder's tables against the data."""

from __future__ import annotations

import csv
import io
import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from vecset.encoders.graph import (
    ATOM_FEATURE_WIDTH,
    BOND_EDGE_TYPES,
    DESCRIPTOR_NAMES,
    DescriptorScaler,
    FeatureCache,
    GraphEncoder,
    InvalidMolecule,
    MoleculeFeaturizer,
    NodeFeaturizer,
    canonical_smiles,
    featurize_smiles,
    graph_tensors,
    mol_to_graph,
    molecule_descriptors,
    murcko_scaffold,
    parse_smiles,
    read_molecule_csv,
    scaffold_groups,
)
from vecset.pipelines.molecules.data import MoleculeDataModule
from vecset.pipelines.molecules.options import MoleculeFeatures, MoleculeSplit
from vecset.pipelines.molecules.splits import random_split

ROOT = Path(__file__).resolve().parents[2]
FREESOLV = ROOT / "data" / "molecules" / "freesolv.csv"


def freesolv_slice(tmp_path: Path, rows: int = 60) -> Path:
    path = tmp_path / "fs.csv"
    path.write_text("".join(FREESOLV.read_text().splitlines(keepends=True)[: rows + 1]))
    return path


def write(path: Path, rows: list[list]) -> Path:
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    return path


def count_featurized(monkeypatch) -> list[str]:
    """The SMILES the reader featurizes from now on (``MoleculeFeaturizer.__call__``)."""
    import vecset.encoders.graph.reading as reading

    calls: list[str] = []
    real = reading.MoleculeFeaturizer.__call__
    monkeypatch.setattr(reading.MoleculeFeaturizer, "__call__", lambda self, s: calls.append(s) or real(self, s))
    return calls


# -- the refactored reader gives today's items -------------------------------------------


def reference_items(path: Path, max_dist: int, lap_pe_k: int) -> list[dict]:
    """The molecule items as MoleculeDataModule made them before the reader moved to
    encoders/graph (its ``_featurize``, row loop and ``_normalize_descriptors``, inline),
    standardized on the random split of seed 0."""
    rows = list(csv.DictReader(open(path)))
    feat = NodeFeaturizer()
    items = []
    for row, r in enumerate(rows):
        mol = parse_smiles(r["smiles"].strip(), 100)
        item = graph_tensors(mol_to_graph(mol), feat, max_dist, lap_pe_k)
        item["raw_desc"] = molecule_descriptors(mol)
        item["smiles"] = r["smiles"].strip()
        item["canonical_smiles"] = canonical_smiles(r["smiles"])
        item.update(id=row, line=row + 2, y=torch.tensor([float(r["expt"])], dtype=torch.float32))
        items.append(item)
    train = np.stack([items[i]["raw_desc"] for i in random_split(len(items), 0)["train"]])
    mean = np.nan_to_num(np.nanmean(train, 0))
    std = np.nan_to_num(np.nanstd(train, 0))
    std = np.where(std > 0, std, 1.0)
    for it in items:
        z = (it["raw_desc"] - mean) / std
        it["features"] = torch.from_numpy(np.clip(np.nan_to_num(z, nan=0.0), -5, 5)).float()
    return items


def assert_same_items(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert list(a) == list(b)
        for k, v in b.items():
            if isinstance(v, torch.Tensor):
                assert a[k].dtype == v.dtype and torch.equal(a[k], v), k
            elif isinstance(v, np.ndarray):
                assert a[k].dtype == v.dtype and np.array_equal(a[k], v, equal_nan=True), k
            else:
                assert a[k] == v, k


def test_freesolv_items_equal_the_items_before_the_reader_moved(tmp_path):
    path = freesolv_slice(tmp_path, 60)
    want = reference_items(path, max_dist=5, lap_pe_k=3)
    for _ in range(2):  # featurized, then read from the feature cache
        dm = MoleculeDataModule(str(path), target_columns=["expt"], features=MoleculeFeatures(descriptors=True, max_dist=5, lap_pe_k=3))
        dm.setup("fit")
        assert_same_items(sorted(dm.items, key=lambda it: it["id"]), want)
        assert [it["id"] for it in dm.splits["train"]] == random_split(60, 0)["train"].tolist()
    assert len(list(Path(dm.cache.directory).glob("*.pt"))) == 1


def test_read_molecule_csv_unlabelled_file_and_its_invalid_rows(tmp_path):
    path = write(tmp_path / "new.csv", [["smiles"], ["CCO"], ["C1CC"], [" c1ccccc1O "], [""]])
    table = read_molecule_csv(path, MoleculeFeaturizer())
    assert [(it["id"], it["line"], it["smiles"]) for it in table.items] == [(0, 2, "CCO"), (2, 4, "c1ccccc1O")]
    assert "y" not in table.items[0] and table.rows == 4
    assert [(s["line"], s["smiles"]) for s in table.skipped] == [(3, "C1CC"), (5, "")]
    assert "unclosed ring" in table.skipped[0]["reason"] and table.skipped[1]["reason"] == "empty SMILES"


def test_a_repeated_smiles_is_featurized_once_and_its_rows_share_nothing(tmp_path, monkeypatch):
    calls = count_featurized(monkeypatch)
    path = write(tmp_path / "twice.csv", [["smiles", "y"], ["CCO", "1"], ["CCN", "2"], ["CCO", "3"]])
    table = read_molecule_csv(path, MoleculeFeaturizer(), target_columns=["y"])
    assert calls == ["CCO", "CCN"]
    a, _, c = table.items
    assert torch.equal(a["x"], c["x"]) and a["x"] is not c["x"] and [float(it["y"]) for it in table.items] == [1, 2, 3]


def test_each_featurized_molecule_carries_its_canonical_smiles_also_from_the_cache(tmp_path):
    """The reader names each molecule by RDKit's canonical SMILES from the one parse it featurizes
    (what the duplicate checks compare): two spellings of one molecule get one name, and a read
    from the feature cache gives the same names."""
    path = write(tmp_path / "spellings.csv", [["smiles"], ["OCC"], ["CCO"], ["c1ccccc1O"], ["C1CC"]])
    cache = FeatureCache(tmp_path / "cache")
    for _ in range(2):  # featurized, then read from the cache
        table = read_molecule_csv(path, MoleculeFeaturizer(), cache=cache)
        assert [it["canonical_smiles"] for it in table.items] == ["CCO", "CCO", "Oc1ccccc1"]
        assert [it["canonical_smiles"] for it in table.items] == [canonical_smiles(it["smiles"]) for it in table.items]
    assert MoleculeFeaturizer()("OCC").canonical_smiles == "CCO"


def test_the_featurizers_widths_are_constants_the_featurized_molecules_have():
    """``ATOM_FEATURE_WIDTH``, ``BOND_EDGE_TYPES`` and ``DESCRIPTOR_NAMES`` (what the molecule
    data's links read when a config is parsed, before any molecule) are the featurizer's widths."""
    from rdkit.Chem import Descriptors

    f = MoleculeFeaturizer(descriptors=True)
    m = f("c1ccccc1C(=O)O")
    assert m.graph["x"].shape[1] == f.nodes.dim == f.structure.node_dim == ATOM_FEATURE_WIDTH == 42
    assert f.nodes.num_edge_types == f.structure.num_edge_types == BOND_EDGE_TYPES == 6
    assert int(m.graph["edge"].max()) < BOND_EDGE_TYPES
    assert DESCRIPTOR_NAMES == tuple(name for name, _ in Descriptors._descList)
    assert m.descriptors.shape == (len(DESCRIPTOR_NAMES),)
    assert NodeFeaturizer(categorical={}, numeric=[]).dim == 1  # no attributes: the constant 1


# -- the feature cache ---------------------------------------------------------------------


def test_a_second_read_comes_from_the_cache_without_featurizing(tmp_path, monkeypatch):
    calls = count_featurized(monkeypatch)
    path = freesolv_slice(tmp_path, 20)
    cache = FeatureCache(tmp_path / "cache")
    first = read_molecule_csv(path, MoleculeFeaturizer(lap_pe_k=2), target_columns=["expt"], cache=cache)
    assert len(calls) == 20 and len(list((tmp_path / "cache").glob("*.pt"))) == 1
    again = read_molecule_csv(path, MoleculeFeaturizer(lap_pe_k=2), target_columns=["expt"], cache=cache)
    assert len(calls) == 20  # nothing featurized
    assert_same_items(again.items, first.items)


@pytest.mark.parametrize("change", [{"max_dist": 4}, {"lap_pe_k": 3}, {"descriptors": True}, {"max_atoms": 50}])
def test_a_changed_setting_misses_the_cache(tmp_path, monkeypatch, change):
    calls = count_featurized(monkeypatch)
    path = freesolv_slice(tmp_path, 10)
    settings = {"max_atoms": 100, "max_dist": 8, "lap_pe_k": 0, "descriptors": False}
    cache = FeatureCache(tmp_path / "cache")
    read_molecule_csv(path, MoleculeFeaturizer(**settings), target_columns=["expt"], cache=cache)
    read_molecule_csv(path, MoleculeFeaturizer(**settings), target_columns=["expt"], cache=cache)
    assert len(calls) == 10
    table = read_molecule_csv(path, MoleculeFeaturizer(**(settings | change)), target_columns=["expt"], cache=cache)
    assert len(calls) == 20 and len(list((tmp_path / "cache").glob("*.pt"))) == 2
    assert ("lap" in table.items[0]) == ("lap_pe_k" in change) and ("raw_desc" in table.items[0]) == ("descriptors" in change)


def test_a_changed_smiles_rdkit_or_featurization_code_misses_the_cache_a_changed_target_does_not(tmp_path, monkeypatch):
    import vecset.encoders.graph.cache as cache_module

    calls = count_featurized(monkeypatch)
    path = write(tmp_path / "m.csv", [["smiles", "y"], ["CCO", "1"], ["CCN", "2"]])
    cache = FeatureCache(tmp_path / "cache")

    def read() -> int:
        before = len(calls)
        read_molecule_csv(path, MoleculeFeaturizer(), target_columns=["y"], cache=cache)
        return len(calls) - before

    assert read() == 2
    write(path, [["smiles", "y"], ["CCO", "5"], ["CCN", "7"]])
    assert read() == 0  # the tensors depend on the SMILES only
    write(path, [["smiles", "y"], ["CCO", "5"], ["CCC", "7"]])
    assert read() == 2
    from rdkit import rdBase

    monkeypatch.setattr(rdBase, "rdkitVersion", "1999.01.1")
    assert read() == 2
    monkeypatch.setattr(cache_module, "code_digest", lambda: "edited")
    assert read() == 2


def test_an_unreadable_cache_file_is_a_logged_miss_and_is_replaced(tmp_path, monkeypatch, caplog):
    calls = count_featurized(monkeypatch)
    path = write(tmp_path / "m.csv", [["smiles", "y"], ["CCO", "1"], ["C1CC", "2"]])
    cache = FeatureCache(tmp_path / "cache")
    read_molecule_csv(path, MoleculeFeaturizer(), target_columns=["y"], cache=cache)
    (file,) = (tmp_path / "cache").glob("*.pt")
    file.write_bytes(file.read_bytes()[:100])  # truncated
    with caplog.at_level(logging.WARNING):
        table = read_molecule_csv(path, MoleculeFeaturizer(), target_columns=["y"], cache=cache)
    assert len(calls) == 4 and f"molecule cache {file} not used" in caplog.text
    assert [s["line"] for s in table.skipped] == [3]
    read_molecule_csv(path, MoleculeFeaturizer(), target_columns=["y"], cache=cache)
    assert len(calls) == 4  # the file was written again


def test_a_cache_folder_that_cannot_be_written_is_a_warning_not_an_error(tmp_path, caplog):
    (tmp_path / "taken").write_text("a file, not a folder")
    path = write(tmp_path / "m.csv", [["smiles", "y"], ["CCO", "1"], ["CCN", "2"]])
    with caplog.at_level(logging.WARNING):
        table = read_molecule_csv(path, MoleculeFeaturizer(), target_columns=["y"],
                                  cache=FeatureCache(tmp_path / "taken" / "cache"))
    assert len(table.items) == 2 and "molecule cache not written to" in caplog.text


def test_the_cache_folder_comes_from_the_environment_or_the_option(tmp_path, monkeypatch):
    monkeypatch.setenv("VECSET_CACHE", str(tmp_path / "env"))
    assert FeatureCache().directory == tmp_path / "env" / "molecules"
    monkeypatch.delenv("VECSET_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert FeatureCache().directory == tmp_path / "xdg" / "vecset" / "molecules"
    path = write(tmp_path / "m.csv", [["smiles", "y"], *([s, "1"] for s in ("CCO", "CCN", "CCC", "CCCl", "CCF"))] * 3)
    dm = MoleculeDataModule(str(path), target_columns=["y"], cache_dir=str(tmp_path / "mine"))
    dm.setup("fit")
    assert len(list((tmp_path / "mine").glob("*.pt"))) == 1 and not (tmp_path / "xdg").exists()
    MoleculeDataModule(str(path), target_columns=["y"], cache=False).setup("fit")
    assert not (tmp_path / "xdg").exists()


# -- progress -----------------------------------------------------------------------------


def test_featurizing_shows_progress_and_a_cache_hit_does_not(tmp_path, capsys, monkeypatch):
    from rich.console import Console

    from vecset.pipelines import console as vconsole

    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    out = featurize_smiles(["CCO", "CCN", "C1CC"], MoleculeFeaturizer(),
                           progress=lambda s, d: vconsole.track(s, d, terminal), source="m.csv")
    assert isinstance(out["C1CC"], InvalidMolecule) and out["CCO"].graph["x"].shape == (3, 42)
    shown = terminal.file.getvalue()
    assert "featurizing m.csv" in shown and "3/3" in shown
    # the data module's bar (rich's console), once: the second setup reads the cache; on the
    # captured stdout (not a terminal) nothing
    path = write(tmp_path / "m.csv", [["smiles", "y"], *([s, "1"] for s in ("CCO", "CCN", "CCC", "CCCl", "CCF") * 3)])
    MoleculeDataModule(str(path), target_columns=["y"], cache=False).setup("fit")
    assert capsys.readouterr().out == ""
    shown = io.StringIO()
    monkeypatch.setattr(vconsole, "get_console", lambda: Console(file=shown, force_terminal=True, width=100))
    MoleculeDataModule(str(path), target_columns=["y"]).setup("fit")
    first = shown.getvalue()
    assert "featurizing m.csv" in first and "5/5" in first
    MoleculeDataModule(str(path), target_columns=["y"]).setup("fit")
    assert shown.getvalue() == first


def test_no_featurizing_bar_when_the_trainer_shows_none(tmp_path, capsys):
    import pytorch_lightning as pl

    path = write(tmp_path / "m.csv", [["smiles", "y"], *([s, "1"] for s in ("CCO", "CCN", "CCC", "CCCl", "CCF"))] * 3)
    dm = MoleculeDataModule(str(path), target_columns=["y"])
    dm.trainer = pl.Trainer(enable_progress_bar=False, logger=False, enable_checkpointing=False,
                            default_root_dir=tmp_path)
    capsys.readouterr()
    dm.setup("fit")
    assert "featurizing" not in capsys.readouterr().out and len(dm.items) == 15


# -- descriptors and scaffolds ----------------------------------------------------------------


def test_descriptor_scaler_standardizes_fills_and_clips():
    train = np.array([[1.0, np.nan, 3.0, 0.0], [3.0, np.nan, 3.0, 0.0], [np.nan, np.nan, 3.0, 100.0]])
    s = DescriptorScaler().fit(train)
    assert s.dim == 4 and s.mean.tolist() == [2.0, 0.0, 3.0, pytest.approx(100 / 3)]
    assert s.std[1] == 1.0 and s.std[2] == 1.0  # all NaN / constant: no division by 0
    z = s.transform(np.array([3.0, 4.0, np.nan, 1e9]))
    assert z.dtype == torch.float32 and z.tolist() == [1.0, 4.0, 0.0, 5.0]  # NaN -> the mean, clipped at 5
    with pytest.raises(ValueError, match="before fit"):
        DescriptorScaler().transform(train[0])


def test_scaffold_groups_in_first_appearance_order():
    smiles = ["c1ccccc1C", "CCO", "c1ccccc1O", "C1CCCCC1", "c1ccccc1N", "CCN"]
    assert scaffold_groups(smiles) == [[0, 2, 4], [1, 5], [3]]
    assert murcko_scaffold("c1ccccc1CC") == "c1ccccc1" and murcko_scaffold("CCO") == ""


# -- max_dist and lap_pe_k: the data's, checked by the encoder at the hand-over ------------------


def test_the_encoder_checks_its_tables_against_the_data(tmp_path):
    path = freesolv_slice(tmp_path, 10)
    dm = MoleculeDataModule(str(path), target_columns=["expt"], features=MoleculeFeatures(max_dist=6, lap_pe_k=2), split=MoleculeSplit(method="column"))
    spec = dm.data_spec("predict")  # no setup needed: the settings are the featurizer's
    assert (spec.structure.max_dist, spec.structure.lap_pe_k, spec.structure.node_dim, spec.structure.num_edge_types) == (6, 2, 42, 6)
    assert GraphEncoder(16, max_dist=6, lap_pe_k=2).receive(spec) is None
    with pytest.raises(ValueError, match=r"^GraphEncoder has max_dist=8 but MoleculeDataModule made the graphs with "
                                         r"max_dist=6; give the encoder the data's values"):
        GraphEncoder(16, max_dist=8, lap_pe_k=2).receive(spec)
    with pytest.raises(ValueError, match=r"lap_pe_k=0 but MoleculeDataModule made the graphs with lap_pe_k=2"):
        GraphEncoder(16, max_dist=6).receive(spec)
    # neighbours attention has no distance table: only the widths it uses are checked
    assert GraphEncoder(16, attention="neighbours", max_dist=8, lap_pe_k=2).receive(spec) is None


def test_a_config_with_another_max_dist_fails_before_any_step(tmp_path, monkeypatch, capsys):
    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "mismatch.yaml"
    cfg.write_text(f"""
trainer: {{max_epochs: 1, accelerator: cpu, devices: 1, enable_progress_bar: false, enable_model_summary: false}}
model:
  class_path: vecset.pipelines.TaskModule
  init_args:
    encoder: {{class_path: vecset.encoders.GraphEncoder, init_args: {{d_model: 8, node_dim: 42, heads: 2, max_dist: 6}}}}
    backbone: {{class_path: vecset.backbone.Backbone, init_args: {{d_model: 8, depth: 1, heads: 2}}}}
    head: {{class_path: vecset.heads.SequenceHead, init_args: {{d_model: 8, num_outputs: 1, task: regression}}}}
data:
  class_path: vecset.pipelines.MoleculeDataModule
  init_args: {{csv_path: {freesolv_slice(tmp_path, 30)}, target_columns: [expt], features: {{max_dist: 5}}}}
""")
    with pytest.raises(SystemExit):  # the data links its max_dist into the encoder: one value, given once
        run_cli(["fit", "--config", str(cfg), "--plots=false"])
    assert ("graph max_dist given twice: model.init_args.encoder.init_args.max_dist=6 but data.init_args.features.max_dist=5"
            in capsys.readouterr().err)
    assert not list(tmp_path.rglob("*.ckpt"))


def test_the_node_graph_data_hands_over_its_structure_too():
    from vecset.pipelines.graphs.data import GraphNodeDataModule

    dm = GraphNodeDataModule(lap_pe_k=4)
    spec = dm.data_spec("fit")
    assert (spec.structure.lap_pe_k, spec.structure.node_dim, spec.structure.num_edge_types) == (4, 1, 2)
    with pytest.raises(ValueError, match="lap_pe_k=2 but GraphNodeDataModule made the graphs with lap_pe_k=4"):
        GraphEncoder(32, node_dim=1, attention="neighbours", num_edge_types=2, lap_pe_k=2).receive(spec)
