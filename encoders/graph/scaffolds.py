"""Bemis-Murcko scaffolds (Bemis & Murcko 1996, "The Properties of Known Drugs. 1. Molecular
Frameworks"): molecules grouped by their ring systems and linkers, via RDKit's MurckoScaffold,
for splits that keep a scaffold's molecules on one side."""

from __future__ import annotations


def murcko_scaffold(smiles: str) -> str:
    """The scaffold SMILES of one molecule (without chirality); "" for a molecule without rings."""
    from rdkit.Chem.Scaffolds import MurckoScaffold

    return MurckoScaffold.MurckoScaffoldSmiles(smiles=smiles, includeChirality=False)


def scaffold_groups(smiles: list[str]) -> list[list[int]]:
    """Indices of ``smiles`` grouped by scaffold, the groups in the order their first molecule
    comes, each group's indices ascending (so a split over them is deterministic)."""
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(smiles):
        groups.setdefault(murcko_scaffold(s), []).append(i)
    return list(groups.values())
