"""The physics token (issue #58 item 3): a molecule's physics descriptors as one more vector of the
set, first; from the featurizer (``features.physics``) through the batch, the cache and the
device-resident path, to ``GraphEncoder(physics_token=True)``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rdkit import Chem

from vecset.contracts.data_spec import DataSpec
from vecset.encoders.graph import FeatureCache, GraphEncoder, MoleculeFeaturizer, featurize_smiles
from vecset.encoders.graph.geometry import embed
from vecset.encoders.graph.physics import (
    PHYSICS_NAMES,
    PHYSICS_SCALE,
    PHYSICS_TOKEN_WIDTH,
    physics_descriptors,
    physics_token,
)
from vecset.pipelines.molecules.device import ResidentGraphs
from vecset.pipelines.molecules.options import MoleculeFeatures

H = 4


def test_the_token_values_are_the_descriptors_over_their_scales_with_a_missing_flag():
    mol = Chem.MolFromSmiles("CC(=O)O")
    molh, _ = embed(mol)
    token = physics_token(mol, molh)
    assert token.shape == (PHYSICS_TOKEN_WIDTH,) == (len(PHYSICS_NAMES) + 1,) and token.dtype == np.float32
    np.testing.assert_allclose(token[:-1], physics_descriptors(mol, molh) / np.array(PHYSICS_SCALE), rtol=1e-6)
    assert token[-1] == 0
    # no conformer: the GB energy and the surface are 0 and flagged, the 2-D entries stay
    none = physics_token(mol, None)
    assert (none[:2] == 0).all() and none[-1] == 1
    np.testing.assert_allclose(none[2:-1], token[2:-1])


def test_the_featurizer_gives_one_vector_per_molecule_in_the_cache_key_and_the_batch(tmp_path):
    on = MoleculeFeaturizer(geometry=True, physics=True)
    assert on.structure.physics and not MoleculeFeaturizer(geometry=True).structure.physics
    cache = FeatureCache(tmp_path)
    got = featurize_smiles(["CCO", "c1ccccc1O"], on, cache)
    featurize_smiles(["CCO", "c1ccccc1O"], MoleculeFeaturizer(geometry=True), cache)
    assert len(list(tmp_path.glob("*.pt"))) == 2  # with and without physics: two keys
    again = featurize_smiles(["CCO", "c1ccccc1O"], on, cache)
    torch.testing.assert_close(again["CCO"].graph["physics"], got["CCO"].graph["physics"])
    mol = Chem.MolFromSmiles("c1ccccc1O")
    np.testing.assert_allclose(got["c1ccccc1O"].graph["physics"].numpy(), physics_token(mol, embed(mol)[0]))
    items = [got[s].item(id=i) for i, s in enumerate(["CCO", "c1ccccc1O"])]
    batch = on.collate(items)
    assert batch["physics"].shape == (2, PHYSICS_TOKEN_WIDTH)
    torch.testing.assert_close(batch["physics"][1], got["c1ccccc1O"].graph["physics"])
    # the molecules held on the device carry the same vector as the classic batch
    resident = ResidentGraphs.pack(items, unreachable=on.max_dist + 1).gather([1, 0])
    torch.testing.assert_close(resident["physics"], batch["physics"][[1, 0]])
    with pytest.raises(ValueError, match=r"^physics: true needs geometry: true"):
        MoleculeFeaturizer(physics=True)
    with pytest.raises(ValueError, match=r"^features.physics: true needs features.geometry: true"):
        MoleculeFeatures(physics=True)
    assert MoleculeFeatures(geometry=True, physics=True).featurizer().physics


def test_the_token_comes_first_and_the_atoms_set_is_unchanged_behind_it():
    """With the token: the atoms' vectors, mask and bias are the plain encoder's, one place on; the
    token is the linear map of the physics values, sees and is seen by every real atom with bias 0
    and no bond, and is masked nowhere."""
    f = MoleculeFeaturizer(geometry=True, physics=True)
    batch = f.collate([f(s).item(id=i) for i, s in enumerate(["CCO", "c1ccccc1O"])])  # 3 and 7 atoms
    torch.manual_seed(0)
    plain = GraphEncoder(16, heads=H, geometry="distance_gaussian")
    torch.nn.init.normal_(plain.dist_bias.weight)  # zero at init: give the bias values to compare
    token = GraphEncoder(16, heads=H, geometry="distance_gaussian", physics_token=True)
    token.load_state_dict(plain.state_dict(), strict=False)
    a, b = plain(batch), token(batch)
    B, N = batch["mask"].shape
    assert b.x.shape == (B, N + 1, 16) and b.bias.shape == (B, H, N + 1, N + 1)
    torch.testing.assert_close(b.x[:, 1:], a.x)
    torch.testing.assert_close(b.x[:, 0], token.physics_proj(batch["physics"]))
    assert b.mask[:, 0].all() and torch.equal(b.mask[:, 1:], a.mask)
    torch.testing.assert_close(b.bias[:, :, 1:, 1:], a.bias)
    assert (b.bias[:, :, 0] == 0).all() and (b.bias[:, :, :, 0] == 0).all()
    assert b.edges.shape == (B, a.edges.shape[1], N + 1, N + 1) and (b.edges[:, :, 0] == 0).all()
    torch.testing.assert_close(b.edges[:, :, 1:, 1:], a.edges)
    # neighbours attention (a bool bias of allowed pairs): the token and every real atom see each other
    nb = GraphEncoder(16, heads=H, attention="neighbours", physics_token=True)(batch)
    assert nb.bias[0, 0, :4].all() and not nb.bias[0, 0, 4:].any()  # "CCO": the token, 3 atoms, padding
    assert nb.bias[0, 1:4, 0].all()


def test_the_token_needs_the_datas_physics_and_says_where_to_set_it():
    enc = GraphEncoder(16, heads=H, physics_token=True)
    with pytest.raises(ValueError, match=r"^GraphEncoder has physics_token=True but MoleculeDataModule made the "
                                         r"graphs without physics descriptors \(set its features.physics: true\)"):
        enc.receive(DataSpec(source="MoleculeDataModule", structure=MoleculeFeaturizer(geometry=True).structure))
    enc.receive(DataSpec(source="MoleculeDataModule",
                         structure=MoleculeFeaturizer(geometry=True, physics=True).structure))
    with pytest.raises(ValueError, match=r"needs the molecules' physics descriptors \(batch\['physics'\]\)"):
        enc(MoleculeFeaturizer().collate([MoleculeFeaturizer()("CCO").item(id=0)]))
