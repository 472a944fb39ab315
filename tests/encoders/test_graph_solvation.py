"""Solvation atom features (encoders/graph/solvation.py, MoleculeFeaturizer(charges=..., surface=...)):
Gasteiger charges with their hydrogens' equal RDKit's on the explicit-hydrogen molecule, NaN
charges are 0 and counted, per-atom surfaces sum to FreeSASA's total and do not move when the
conformer is rotated, a molecule without a conformer gets surface 0 and the flag, counted; the
options change the width and the cache key; surface without geometry is an error."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from vecset.encoders.graph import (
    ATOM_FEATURE_WIDTH,
    FeatureCache,
    MoleculeFeaturizer,
    atom_feature_width,
    featurize_smiles,
    read_molecule_csv,
)
from vecset.encoders.graph.geometry import FAILED, embed
from vecset.encoders.graph.solvation import SURFACE_SCALE, atom_surface
from vecset.pipelines.molecules.options import MoleculeFeatures

CHARGE, SURFACE, NO_SURFACE = ATOM_FEATURE_WIDTH, ATOM_FEATURE_WIDTH + 1, ATOM_FEATURE_WIDTH + 2  # x's columns


@pytest.mark.parametrize("smiles", ["CCO", "CC(=O)O"])
def test_charges_are_rdkits_gasteiger_with_their_hydrogens(smiles):
    """Reference: RDKit's Gasteiger charges on the molecule with explicit hydrogens, each heavy
    atom's plus its hydrogens' (the featurizer reads the implicit-hydrogen molecule's)."""
    from rdkit import Chem
    from rdkit.Chem import AllChem

    mol = Chem.MolFromSmiles(smiles)
    molh = Chem.AddHs(mol)
    AllChem.ComputeGasteigerCharges(molh)
    q = lambda a: a.GetDoubleProp("_GasteigerCharge")  # noqa: E731
    want = [q(a) + sum(q(h) for h in a.GetNeighbors() if h.GetAtomicNum() == 1)
            for a in molh.GetAtoms() if a.GetIdx() < mol.GetNumAtoms()]
    x = MoleculeFeaturizer(charges=True)(smiles).graph["x"]
    assert x.shape == (mol.GetNumAtoms(), ATOM_FEATURE_WIDTH + 1)
    np.testing.assert_allclose(x[:, CHARGE].numpy(), want, atol=1e-6)
    assert abs(float(x[:, CHARGE].sum())) < 1e-5  # a neutral molecule
    assert float(x[2 if smiles == "CCO" else 3, CHARGE]) < -0.15  # the hydroxyl group is negative


def test_a_charge_rdkit_cannot_compute_is_zero_and_counted(tmp_path, caplog):
    path = tmp_path / "m.csv"
    path.write_text("smiles,y\nC[Se]C,1\nCCO,2\n")
    with caplog.at_level(logging.WARNING):
        table = read_molecule_csv(path, MoleculeFeaturizer(charges=True), target_columns=["y"])
    assert len(table.items) == 2 and table.charges_failed == 3  # Se has no Gasteiger parameters: all 3 NaN
    assert (table.items[0]["x"][:, CHARGE] == 0).all() and table.items[1]["x"][:, CHARGE].abs().max() > 0.1
    assert "3 atoms in 1 molecules have no Gasteiger charge (RDKit gives NaN for their element; charge 0): " \
           "'C[Se]C'" in caplog.text


def rotate(molh, seed: int) -> None:
    from rdkit.Chem import rdMolTransforms

    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    move = np.eye(4)
    move[:3, :3], move[:3, 3] = q * np.linalg.det(q), [4.0, -2.0, 7.5]
    rdMolTransforms.TransformConformer(molh.GetConformer(), move)


def test_surfaces_sum_to_freesasas_total_and_do_not_move_with_the_conformer():
    from rdkit import Chem
    from rdkit.Chem import rdFreeSASA

    mol = Chem.MolFromSmiles("CC(=O)Nc1ccc(O)cc1")
    n = mol.GetNumAtoms()
    molh, _ = embed(mol)
    area = atom_surface(molh, n)
    table = Chem.GetPeriodicTable()
    total = rdFreeSASA.CalcSASA(molh, [table.GetRvdw(a.GetAtomicNum()) for a in molh.GetAtoms()])
    assert 250 < total < 450  # paracetamol, A^2
    np.testing.assert_allclose(area.sum() * SURFACE_SCALE, total, rtol=1e-5)
    np.testing.assert_allclose(MoleculeFeaturizer(geometry=True, charges=True, surface=True)(
        "CC(=O)Nc1ccc(O)cc1").graph["x"][:, SURFACE].numpy(), area, rtol=1e-6)  # the featurizer's conformer
    rotate(molh, 3)
    moved = atom_surface(molh, n)
    # Lee-Richards slices the molecule along z: rotated, each atom's area moves by its slicing error only
    np.testing.assert_allclose(moved, area, atol=0.03)  # 3 A^2; a methyl is about 80
    np.testing.assert_allclose(moved.sum(), area.sum(), rtol=0.01)


def test_no_conformer_is_surface_zero_flagged_and_counted(tmp_path, caplog):
    """Cyclopropyne (RDKit cannot embed it) gets surface 0 and no_surface 1, counted and logged; a
    salt is measured per fragment and a single atom is embedded for its surface."""
    path = tmp_path / "m.csv"
    path.write_text("smiles,y\nCC(=O)[O-].[Na+],1\nC1#CC1,2\nC,3\nCCO,4\n")
    with caplog.at_level(logging.WARNING):
        table = read_molecule_csv(path, MoleculeFeaturizer(geometry=True, charges=True, surface=True),
                                  target_columns=["y"])
    assert len(table.items) == 4 and table.geometry["failed"] == 1 and table.geometry["no_surface"] == 1
    assert "1 without a solvent-accessible surface (0, flagged by no_surface): 'C1#CC1'" in caplog.text
    salt, failed, single, ethanol = (it["x"] for it in table.items)
    assert int(table.items[1]["geometry"]) == FAILED
    assert (failed[:, SURFACE] == 0).all() and (failed[:, NO_SURFACE] == 1).all()
    for x in (salt, single, ethanol):
        assert (x[:, SURFACE] > 0).all() and (x[:, NO_SURFACE] == 0).all()
    assert 1.2 < float(single[0, SURFACE]) < 1.7  # methane: about 145 A^2
    assert float(salt[4, SURFACE]) > 1.0  # Na+ alone: not buried in the acetate ETKDG placed it on


def test_the_options_set_the_width_and_the_cache_key(tmp_path):
    widths = {(False, False): 42, (True, False): 43, (False, True): 44, (True, True): 45}
    for (charges, surface), width in widths.items():
        f = MoleculeFeaturizer(geometry=True, charges=charges, surface=surface)
        assert atom_feature_width(charges, surface) == f.nodes.dim == f.structure.node_dim == width
        assert f("CCO").graph["x"].shape == (3, width)
    cache = FeatureCache(tmp_path)
    for kw in ({}, {"charges": True}, {"geometry": True}, {"geometry": True, "surface": True}):
        featurize_smiles(["CCO"], MoleculeFeaturizer(**kw), cache)
    assert len(list(tmp_path.glob("*.pt"))) == 4
    assert MoleculeFeaturizer().settings() == MoleculeFeaturizer(charges=False, surface=False).settings()


def test_surface_without_geometry_is_an_error_naming_both(tmp_path):
    from vecset.pipelines.molecules.data import MoleculeDataModule

    with pytest.raises(ValueError, match=r"^surface: true needs geometry: true \(the solvent-accessible surface"):
        MoleculeFeaturizer(surface=True)
    path = tmp_path / "m.csv"
    path.write_text("smiles,y\nCCO,1\n")
    with pytest.raises(ValueError, match=r"^features.surface: true needs features.geometry: true"):
        MoleculeDataModule(str(path), target_columns=["y"], features=MoleculeFeatures(surface=True))
