"""Kinds of molecule a model's training set may not hold: several fragments (a salt or a
mixture), a net charge, a metal atom. A molecule of a kind no training molecule has is outside
the model's applicability domain whatever its fingerprint similarity: FreeSolv's neutral
organic molecules say nothing of sodium acetate (``CC(=O)[O-].[Na+]``), whose acetate part
alone is similar to them.
"""

from __future__ import annotations

from collections.abc import Iterable

# the non-metals (noble gases included) with boron and silicon, which organic data sets hold;
# every other element counts as a metal (the metalloids Ge, As, Sb, Te too)
NON_METALS = frozenset({"H", "He", "B", "C", "N", "O", "F", "Ne", "Si", "P", "S", "Cl", "Ar", "Se", "Br", "Kr",
                        "I", "Xe", "Rn", "At", "*"})
KINDS = ("fragments", "charged", "metal")


def kinds_of(mol) -> dict[str, str]:
    """The unusual kinds an RDKit molecule is (``KINDS``), each with what was found."""
    from rdkit import Chem

    out = {}
    n = len(Chem.GetMolFrags(mol))
    if n > 1:
        out["fragments"] = f"{n} fragments (a salt or mixture)"
    charge = sum(a.GetFormalCharge() for a in mol.GetAtoms())
    if charge:
        out["charged"] = f"net charge {charge:+d}"
    metals = sorted({a.GetSymbol() for a in mol.GetAtoms() if a.GetSymbol() not in NON_METALS})
    if metals:
        out["metal"] = f"metal atom {', '.join(metals)}"
    return out


def kinds_absent(smiles: Iterable[str]) -> frozenset[str]:
    """The ``KINDS`` none of the molecules ``smiles`` is (parsed without sanitizing: a tenth of
    a second for B3DB's 6,000 training molecules)."""
    from rdkit import Chem

    seen: set[str] = set()
    for s in smiles:
        mol = Chem.MolFromSmiles(s, sanitize=False)
        if mol is not None:
            seen |= set(kinds_of(mol))
        if len(seen) == len(KINDS):
            break
    return frozenset(KINDS) - seen


__all__ = ["KINDS", "NON_METALS", "kinds_absent", "kinds_of"]
