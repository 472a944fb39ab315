"""Which molecule a SMILES string is: RDKit's canonical SMILES, so that two spellings of one
molecule (``OCC`` and ``CCO``) compare equal when splits and data sets are checked for overlap.
The reader gives each featurized molecule its own (``Molecule.canonical_smiles``, from the RDKit
molecule it parsed once); ``canonical_smiles`` names a SMILES that is not featurized."""

from __future__ import annotations


def mol_canonical_smiles(mol) -> str:
    """RDKit's canonical SMILES of a parsed RDKit molecule."""
    from rdkit import Chem

    return Chem.MolToSmiles(mol)


def canonical_smiles(smiles: str) -> str:
    """RDKit's canonical SMILES of ``smiles``; the string itself (stripped) when RDKit cannot
    parse it (such rows are skipped by the reader, but an identity is still needed)."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles(smiles)
    return smiles.strip() if mol is None else mol_canonical_smiles(mol)
