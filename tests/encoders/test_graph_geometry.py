"""3-D geometry for molecule attention (encoders/graph/geometry.py, GraphEncoder(geometry=
"distance_gaussian")): distances equal RDKit's, the featurization is deterministic and cached,
the bias is invariant to rotating the conformer and the model stays permutation-equivariant
with it, and a salt, a molecule RDKit cannot embed and a single atom are each kept and counted."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from vecset.backbone import Backbone
from vecset.contracts.data_spec import DataSpec
from vecset.encoders.graph import (
    FeatureCache,
    GraphEncoder,
    MoleculeFeaturizer,
    featurize_smiles,
    read_molecule_csv,
)
from vecset.encoders.graph.encoder import GaussianDistanceBias
from vecset.encoders.graph.geometry import (
    FAILED,
    MMFF,
    SEED,
    SINGLE_ATOM,
    embed,
    heavy_atom_distances,
)

H = 4


def rdkit_distances(smiles: str) -> np.ndarray:
    """RDKit's own ETKDG (seed SEED) + MMFF, heavy atoms of Get3DDistanceMatrix: the reference."""
    from rdkit import Chem
    from rdkit.Chem import AllChem

    mol = Chem.MolFromSmiles(smiles)
    molh = Chem.AddHs(mol)
    params = AllChem.ETKDGv3()
    params.randomSeed = SEED
    assert AllChem.EmbedMolecule(molh, params) == 0
    assert AllChem.MMFFOptimizeMolecule(molh, maxIters=500) == 0
    n = mol.GetNumAtoms()
    return Chem.Get3DDistanceMatrix(molh)[:n, :n]


def test_distances_are_rdkits_and_deterministic():
    f = MoleculeFeaturizer(geometry=True)
    first, again = f("CCO").graph, f("CCO").graph
    assert int(first["geometry"]) == MMFF
    np.testing.assert_allclose(first["dist3d"].numpy(), rdkit_distances("CCO"), atol=1e-5)
    torch.testing.assert_close(first["dist3d"], again["dist3d"], rtol=0, atol=0)
    # ethanol: C-C about 1.51, C-O about 1.42 Angstrom
    assert 1.45 < first["dist3d"][0, 1] < 1.56 and 1.37 < first["dist3d"][1, 2] < 1.47


def test_geometry_is_in_the_cache_key_and_read_back(tmp_path):
    cache = FeatureCache(tmp_path)
    featurize_smiles(["CCO", "c1ccccc1"], MoleculeFeaturizer(geometry=True), cache)
    featurize_smiles(["CCO", "c1ccccc1"], MoleculeFeaturizer(), cache)
    assert len(list(tmp_path.glob("*.pt"))) == 2  # with and without geometry: two keys
    again = featurize_smiles(["CCO", "c1ccccc1"], MoleculeFeaturizer(geometry=True), cache)
    torch.testing.assert_close(again["c1ccccc1"].graph["dist3d"], MoleculeFeaturizer(geometry=True)("c1ccccc1").graph["dist3d"])


def random_rotation(seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q * np.linalg.det(q)  # a proper rotation (det +1)


def trained_looking_bias() -> GaussianDistanceBias:
    torch.manual_seed(0)
    bias = GaussianDistanceBias(H)
    torch.nn.init.normal_(bias.mlp[-1].weight)  # zero at init: give it values to compare
    return bias


def test_bias_is_invariant_to_rotating_and_moving_the_conformer():
    from rdkit import Chem
    from rdkit.Chem import rdMolTransforms

    mol = Chem.MolFromSmiles("CC(=O)Nc1ccc(O)cc1")
    n = mol.GetNumAtoms()
    molh, _ = embed(mol)
    frags = np.zeros(n, dtype=np.int64)
    before = torch.from_numpy(heavy_atom_distances(molh, n, frags))
    positions = molh.GetConformer().GetPositions()
    move = np.eye(4)
    move[:3, :3], move[:3, 3] = random_rotation(3), [4.0, -2.0, 7.5]
    rdMolTransforms.TransformConformer(molh.GetConformer(), move)
    assert np.abs(molh.GetConformer().GetPositions() - positions).max() > 1.0  # it did move
    after = torch.from_numpy(heavy_atom_distances(molh, n, frags))
    bias = trained_looking_bias()
    b0, b1 = bias(before[None]), bias(after[None])
    assert b0.abs().max() > 0.1
    torch.testing.assert_close(b1, b0, atol=1e-4, rtol=1e-4)


def molecule_batch(smiles: list[str]) -> dict:
    f = MoleculeFeaturizer(geometry=True)
    return f.collate([f(s).item(id=i) for i, s in enumerate(smiles)])


def permute_batch(batch: dict, i: int, perm: torch.Tensor) -> dict:
    """Molecule ``i`` of ``batch`` with its atoms reordered by ``perm`` (its real atoms only)."""
    out = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
    n = len(perm)
    for k in ("x", "degree"):
        out[k][i, :n] = batch[k][i, perm]
    for k in ("dist", "edge", "dist3d"):
        out[k][i, :n, :n] = batch[k][i, perm][:, perm]
    return out


@pytest.mark.parametrize("local_mp", ["none", "gine"])
def test_model_with_geometry_is_permutation_equivariant(local_mp):
    """GraphEncoder(geometry) + Backbone (with or without GPS): reordering a molecule's atoms
    reorders its outputs, and the other molecule of the batch does not move."""
    batch = molecule_batch(["CC(=O)Nc1ccc(O)cc1", "OCC"])
    torch.manual_seed(0)
    enc = GraphEncoder(16, heads=H, geometry="distance_gaussian").eval()
    torch.nn.init.normal_(enc.distance_bias.mlp[-1].weight)
    torch.nn.init.normal_(enc.dist_bias.weight)
    bb = Backbone(d_model=16, depth=2, heads=H, mlp_ratio=2.0, local_mp=local_mp).eval()
    n = int(batch["mask"][0].sum())
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(1))
    out = bb(enc(batch)).x
    out_p = bb(enc(permute_batch(batch, 0, perm))).x
    torch.testing.assert_close(out_p[0, :n], out[0, :n][perm], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(out_p[1], out[1], atol=1e-5, rtol=1e-4)
    # the geometry is in the output: without it (zero 3-D bias) the outputs differ
    flat = dict(batch, dist3d=torch.full_like(batch["dist3d"], -1.0))
    assert not torch.allclose(bb(enc(flat)).x, out, atol=1e-3)


def test_salt_unembeddable_and_single_atom_are_kept_and_counted(tmp_path, caplog):
    """Sodium acetate (2 fragments), cyclopropyne (RDKit cannot embed it), methane (one heavy
    atom) and ethanol: all four are used; the counts say which got what, the failure is logged
    by SMILES; the failed molecule's 3-D bias is zero, so its bias is the 2-D one."""
    path = tmp_path / "m.csv"
    path.write_text("smiles,y\nCC(=O)[O-].[Na+],1\nC1#CC1,2\nC,3\nCCO,4\n")
    with caplog.at_level(logging.WARNING):
        table = read_molecule_csv(path, MoleculeFeaturizer(geometry=True), target_columns=["y"])
    assert [it["smiles"] for it in table.items] == ["CC(=O)[O-].[Na+]", "C1#CC1", "C", "CCO"]
    assert table.skipped == []
    assert table.geometry == {"molecules": 4, "embedded": 2, "mmff": 2, "failed": 1, "single_atom": 1,
                              "multi_fragment": 1}
    assert "1 that RDKit could not embed (2-D graph only): 'C1#CC1'" in caplog.text
    salt, failed, single, _ = table.items
    assert (salt["dist3d"][:4, 4] == -1).all() and (salt["dist3d"][:4, :4] >= 0).all()  # Na+ is fragment 2
    assert int(failed["geometry"]) == FAILED and (failed["dist3d"] == -1).all()
    assert int(single["geometry"]) == SINGLE_ATOM and single["dist3d"].tolist() == [[0.0]]
    enc = GraphEncoder(16, heads=H, geometry="distance_gaussian")
    torch.nn.init.normal_(enc.distance_bias.mlp[-1].weight)
    torch.nn.init.normal_(enc.distance_bias.mlp[-1].bias)
    plain = GraphEncoder(16, heads=H)
    plain.load_state_dict(enc.state_dict(), strict=False)
    batch = MoleculeFeaturizer(geometry=True).collate(table.items)
    with_3d, without = enc(batch).bias, plain(batch).bias
    torch.testing.assert_close(with_3d[1], without[1], rtol=0, atol=0)  # the unembeddable one: 2-D only
    assert not torch.allclose(with_3d[3], without[3])
    assert (with_3d[0, :, :4, 4] == without[0, :, :4, 4]).all()  # no 3-D bias between the salt's fragments


def test_encoder_geometry_needs_the_datas_distances():
    enc = GraphEncoder(16, heads=H, geometry="distance_gaussian")
    spec = DataSpec(source="MoleculeDataModule", structure=MoleculeFeaturizer().structure)
    with pytest.raises(ValueError, match=r"^GraphEncoder has geometry='distance_gaussian' but MoleculeDataModule "
                                         r"made the graphs without 3-D distances \(set its geometry: true\)"):
        enc.receive(spec)
    enc.receive(DataSpec(source="MoleculeDataModule", structure=MoleculeFeaturizer(geometry=True).structure))
    with pytest.raises(ValueError, match="needs 3-D distances"):
        enc(MoleculeFeaturizer().collate([MoleculeFeaturizer()("CCO").item(id=0)]))
    with pytest.raises(ValueError, match="^geometry must be 'none' or 'distance_gaussian', got 'xyz'"):
        GraphEncoder(16, geometry="xyz")
    with pytest.raises(ValueError, match="attention='neighbours'"):
        GraphEncoder(16, attention="neighbours", geometry="distance_gaussian")
