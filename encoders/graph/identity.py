"""Which molecule a SMILES string is: RDKit's canonical SMILES, so that two spellings of one
molecule (``OCC`` and ``CCO``) compare equal when splits and data sets are checked for overlap."""

from __future__ import annotations


def canonical_smiles(smiles: str) -> str:
    """RDKit's canonical SMILES of ``smiles``; the string itself (stripped) when RDKit cannot
    parse it (such rows are skipped by the reader, but an identity is still needed)."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles(smiles)
    return smiles.strip() if mol is None else Chem.MolToSmiles(mol)
