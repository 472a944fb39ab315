"""What implicit-solvent models (generalized Born / surface area) compute a solvation free energy
from, per heavy atom: its partial charge and its solvent-accessible surface.

- ``gasteiger_charges``: RDKit's Gasteiger-Marsili charges (2-D, always computable), a heavy
  atom's charge plus its implicit hydrogens' (``_GasteigerHCharge``), so the heavy-atom graph
  carries each group's charge (the charges of a neutral molecule sum to 0). RDKit gives NaN for
  elements without Gasteiger parameters (e.g. Se): such an atom gets 0 and is counted.
- ``atom_surface``: RDKit's FreeSASA (Lee-Richards, probe 1.4 A) on the embedded molecule with
  explicit hydrogens, a heavy atom's SASA plus its hydrogens', in A^2 / 100 (a methyl group is
  about 0.8). The radii are RDKit's van der Waals radii (``GetRvdw``: C 1.7, N 1.6, O 1.55,
  H 1.2 A): ``rdFreeSASA.classifyAtoms`` classifies protein atoms only and gives every atom of
  a small molecule radius 0. Each fragment of a salt is measured alone (ETKDG places fragments
  arbitrarily, even on top of each other).
"""

from __future__ import annotations

import numpy as np

SURFACE_SCALE = 100.0  # A^2 per unit of the surface feature


def gasteiger_charges(mol) -> tuple[np.ndarray, int]:
    """RDKit Mol (implicit hydrogens) -> ((N,) float32 Gasteiger charge per heavy atom, its
    implicit hydrogens' included; the number of atoms whose charge RDKit could not compute,
    which hold 0)."""
    from rdkit import Chem, rdBase
    from rdkit.Chem import rdPartialCharges

    m = Chem.Mol(mol)  # the properties go on a copy: the caller's molecule stays as parsed
    with rdBase.BlockLogs():
        rdPartialCharges.ComputeGasteigerCharges(m)
    q = np.array([a.GetDoubleProp("_GasteigerCharge") + a.GetDoubleProp("_GasteigerHCharge")
                  for a in m.GetAtoms()], dtype=np.float64)
    bad = ~np.isfinite(q)
    q[bad] = 0.0
    return q.astype(np.float32), int(bad.sum())


def atom_surface(molh, n_heavy: int) -> np.ndarray | None:
    """An embedded Mol with explicit hydrogens after its ``n_heavy`` heavy atoms (``geometry.embed``)
    -> (n_heavy,) float32 solvent-accessible surface per heavy atom with its hydrogens', in A^2 /
    ``SURFACE_SCALE``; None when FreeSASA gives a non-finite value."""
    from rdkit import Chem, rdBase
    from rdkit.Chem import rdFreeSASA

    table = Chem.GetPeriodicTable()
    # the heavy atom each atom's surface counts for: itself, or the one an added hydrogen is bonded to
    owner = np.array([a.GetIdx() if a.GetIdx() < n_heavy else a.GetNeighbors()[0].GetIdx() for a in molh.GetAtoms()])
    per_atom = np.zeros(molh.GetNumAtoms())
    with rdBase.BlockLogs():
        mapping: list = []  # per fragment, its atoms' indices in molh
        parts = Chem.GetMolFrags(molh, asMols=True, sanitizeFrags=False, fragsMolAtomMapping=mapping)
        for part, atoms in zip(parts, mapping, strict=True):
            radii = [table.GetRvdw(a.GetAtomicNum()) for a in part.GetAtoms()]
            rdFreeSASA.CalcSASA(part, radii)
            per_atom[list(atoms)] = [float(a.GetProp("SASA")) for a in part.GetAtoms()]
    if not np.isfinite(per_atom).all():
        return None
    out = np.zeros(n_heavy)
    np.add.at(out, owner, per_atom)
    return (out / SURFACE_SCALE).astype(np.float32)
