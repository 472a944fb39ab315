"""Masked atom and bond types (encoders/graph/masking.py)."""

from __future__ import annotations

import torch

from vecset.encoders.graph import MoleculeFeaturizer
from vecset.encoders.graph.masking import BOND_MASK, IGNORE, element_slots, mask_atoms

SMILES = ["CCO", "c1ccccc1C(=O)O", "ClCCBr", "N"]


def _batch():
    f = MoleculeFeaturizer()
    return f.collate([f(s).item(id=i) for i, s in enumerate(SMILES)])


def test_element_slots_are_the_first_block_with_other():
    start, classes = element_slots()
    assert start == 0 and classes[2] == "C" and classes[-1] == "other" and len(classes) == 13


def test_masked_atoms_are_zeroed_and_their_element_is_the_target():
    batch = _batch()
    out = mask_atoms(batch, 0.3, torch.Generator().manual_seed(0))
    chosen = out["atom_target"] != IGNORE
    # at least one atom per molecule, never padding, about 30% of each molecule's atoms
    assert chosen.sum(1).tolist() == [1, 3, 1, 1]
    assert not (chosen & ~batch["mask"]).any()
    assert (out["x"][chosen] == 0).all() and torch.equal(out["x"][~chosen], batch["x"][~chosen])
    classes = element_slots()[1]
    names = {classes[t] for t in out["atom_target"][chosen].tolist()}
    assert names <= {"C", "O", "N", "Cl", "Br"}
    assert out["atom_target"][3, 0].item() == classes.index("N")  # the one atom of ammonia
    assert torch.equal(batch["x"], _batch()["x"])  # the input batch is not changed


def test_hidden_bonds_are_those_of_masked_atoms_only():
    batch = _batch()
    out = mask_atoms(batch, 0.3, torch.Generator().manual_seed(0))
    chosen = out["atom_target"] != IGNORE
    touched = (chosen[:, :, None] | chosen[:, None, :]) & (batch["edge"] > 0)
    assert touched.any() and (out["edge"][touched] == BOND_MASK).all()
    assert torch.equal(out["edge"][~touched], batch["edge"][~touched])
    assert torch.equal(out["dist"], batch["dist"])
    kept = mask_atoms(batch, 0.3, torch.Generator().manual_seed(0), hide_bonds=False)
    assert torch.equal(kept["edge"], batch["edge"])


def test_masks_follow_the_generator():
    batch = _batch()
    a = mask_atoms(batch, 0.5, torch.Generator().manual_seed(1))["atom_target"]
    b = mask_atoms(batch, 0.5, torch.Generator().manual_seed(1))["atom_target"]
    c = mask_atoms(batch, 0.5, torch.Generator().manual_seed(2))["atom_target"]
    assert torch.equal(a, b) and not torch.equal(a, c)
