"""Molecule-level RDKit 2-D descriptors for SequenceHead(extra_features=...) (Chemprop's rdkit_2d feature generator)."""

from __future__ import annotations

import numpy as np


def descriptor_names() -> list[str]:
    """Names of RDKit's 2-D descriptors, in the order ``molecule_descriptors`` returns them."""
    from rdkit.Chem import Descriptors

    return [name for name, _ in Descriptors._descList]


def molecule_descriptors(mol) -> np.ndarray:
    """RDKit's 2-D descriptors of one molecule, (F,) float64; failures and infinities are NaN
    (the DataModule standardizes with training statistics and fills NaN with the mean)."""
    from rdkit.Chem import Descriptors

    vals = Descriptors.CalcMolDescriptors(mol, missingVal=float("nan"), silent=True)
    out = np.array([vals[name] for name in descriptor_names()], dtype=np.float64)
    out[~np.isfinite(out)] = np.nan
    return out
