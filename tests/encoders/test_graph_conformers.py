"""Several conformers per molecule (encoders/graph/geometry.py, MoleculeFeaturizer(conformers=k)):
k = 1 is the single-conformer featurization exactly, k > 1 stores each conformer's distances as
RDKit gives them with conformer 0 the single-conformer one, k is in the cache key, and molecules
with fewer than k conformers, or none, are kept and counted."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from vecset.encoders.graph import (
    FeatureCache,
    MoleculeFeaturizer,
    featurize_smiles,
    read_molecule_csv,
)
from vecset.encoders.graph import geometry as geo
from vecset.encoders.graph.geometry import EMBED_ATTEMPTS, FAILED, MMFF, MMFF_ITERS, SEED

FLEXIBLE = "CCCCCCO"  # hexanol: its conformers differ


def rdkit_conformers(smiles: str, k: int) -> tuple[np.ndarray, int]:
    """RDKit's own ETKDGv3 (seed SEED) of k conformers (``EmbedMolecule`` for k = 1), MMFF on each:
    float32 heavy-atom ``Get3DDistanceMatrix`` per conformer (the reference), and the atom count."""
    from rdkit import Chem
    from rdkit.Chem import AllChem

    mol = Chem.MolFromSmiles(smiles)
    molh = Chem.AddHs(mol)
    params = AllChem.ETKDGv3()
    params.randomSeed, params.maxIterations = SEED, EMBED_ATTEMPTS
    if k == 1:
        assert AllChem.EmbedMolecule(molh, params) == 0
        ids = [-1]
    else:
        ids = list(AllChem.EmbedMultipleConfs(molh, k, params))
    n = mol.GetNumAtoms()
    out = []
    for c in ids:
        assert AllChem.MMFFOptimizeMolecule(molh, maxIters=MMFF_ITERS, confId=c) == 0
        out.append(Chem.Get3DDistanceMatrix(molh, confId=c)[:n, :n].astype(np.float32))
    return np.stack(out), n


def test_one_conformer_is_the_single_conformer_featurization_bit_for_bit():
    graph = MoleculeFeaturizer(geometry=True, conformers=1)(FLEXIBLE).graph
    want, _ = rdkit_conformers(FLEXIBLE, 1)
    assert "conformers3d" not in graph and int(graph["geometry"]) == MMFF
    assert torch.equal(graph["dist3d"], torch.from_numpy(want[0]))
    assert torch.equal(MoleculeFeaturizer(geometry=True)(FLEXIBLE).graph["dist3d"], graph["dist3d"])


def test_three_conformers_are_rdkits_with_conformer_0_the_single_one():
    graph = MoleculeFeaturizer(geometry=True, conformers=3)(FLEXIBLE).graph
    want, n = rdkit_conformers(FLEXIBLE, 3)
    assert graph["conformers3d"].shape == (3, n, n) == (3, 7, 7)
    for c in range(3):  # each conformer's heavy atoms in the featurizer's (RDKit's) order
        assert torch.equal(graph["conformers3d"][c], torch.from_numpy(want[c])), c
    single = MoleculeFeaturizer(geometry=True)(FLEXIBLE).graph["dist3d"]
    assert torch.equal(graph["dist3d"], single) and torch.equal(graph["conformers3d"][0], single)
    assert (graph["conformers3d"][1:] - single).abs().amax() > 0.1  # other conformers, not copies
    # the node features, bonds and 2-D distances do not depend on the conformers
    one = MoleculeFeaturizer(geometry=True)(FLEXIBLE).graph
    assert all(torch.equal(graph[k], one[k]) for k in ("x", "dist", "edge", "degree", "geometry"))


def test_conformers_are_in_the_cache_key_and_read_back(tmp_path):
    cache = FeatureCache(tmp_path)
    one, three = MoleculeFeaturizer(geometry=True), MoleculeFeaturizer(geometry=True, conformers=3)
    assert cache.key(["CCO"], one.settings()) != cache.key(["CCO"], three.settings())
    featurize_smiles(["CCO", FLEXIBLE], one, cache)
    made = featurize_smiles(["CCO", FLEXIBLE], three, cache)
    assert len(list(tmp_path.glob("*.pt"))) == 2
    again = featurize_smiles(["CCO", FLEXIBLE], MoleculeFeaturizer(geometry=True, conformers=3), cache)
    assert torch.equal(again[FLEXIBLE].graph["conformers3d"], made[FLEXIBLE].graph["conformers3d"])


def test_conformers_option_errors():
    with pytest.raises(ValueError, match=r"^conformers: 3 needs geometry: true"):
        MoleculeFeaturizer(conformers=3)
    with pytest.raises(ValueError, match=r"^conformers must be a whole number of at least 1 .*got 0"):
        MoleculeFeaturizer(geometry=True, conformers=0)


def test_fewer_conformers_and_unembeddable_molecules_are_kept_and_counted(tmp_path, caplog, monkeypatch):
    """Cyclopropyne (RDKit embeds no conformer: 2-D only), methane (one atom), a salt, and
    ethanol with one of its 3 conformers lost (as when RDKit embeds fewer than asked): all kept;
    the counts and the log say which got what."""
    embed = geo.embed_conformers

    def lose_one(mol, conformers, seed=SEED):
        molh, embedded = embed(mol, conformers, seed)
        return (molh, embedded[:2]) if mol.GetNumAtoms() == 3 and mol.GetAtomWithIdx(2).GetSymbol() == "O" \
            else (molh, embedded)

    monkeypatch.setattr(geo, "embed_conformers", lose_one)
    path = tmp_path / "m.csv"
    path.write_text("smiles,y\nCC(=O)[O-].[Na+],1\nC1#CC1,2\nC,3\nCCO,4\n")
    with caplog.at_level(logging.INFO):
        table = read_molecule_csv(path, MoleculeFeaturizer(geometry=True, conformers=3), target_columns=["y"])
    assert table.skipped == [] and len(table.items) == 4
    assert table.geometry == {"molecules": 4, "embedded": 2, "mmff": 2, "failed": 1, "single_atom": 1,
                              "multi_fragment": 1, "fewer_conformers": 1}
    assert "1 embedded with fewer than 3 conformers (those embedded used)" in caplog.text
    salt, failed, single, ethanol = table.items
    assert salt["conformers3d"].shape == (3, 5, 5) and (salt["conformers3d"][:, :4, 4] == -1).all()
    assert int(failed["geometry"]) == FAILED and failed["conformers3d"].shape == (1, 3, 3)
    assert (failed["conformers3d"] == -1).all() and (failed["dist3d"] == -1).all()
    assert single["conformers3d"].tolist() == [[[0.0]]]
    assert ethanol["conformers3d"].shape == (2, 3, 3) and torch.equal(ethanol["conformers3d"][0], ethanol["dist3d"])
