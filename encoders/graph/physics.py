"""Molecule-level physics descriptors, the inputs of a graph network with physics features
(ChemRxiv 2025, 684ac0cd3ba0887c33ce0f4d: FreeSolv 0.75 on random splits; issue #58 item 3):
a closed-form generalized-Born polarization energy, the solvent-accessible surface, Crippen logP,
TPSA, H-bond donors and acceptors, rotatable bonds (``PHYSICS_NAMES``, in that order).

The generalized-Born energy (Still, Tempczyk, Hawley & Hendrickson, JACS 112, 6127 (1990)):

    dG_pol = -1/2 k (1/eps_in - 1/eps_out) sum_ij q_i q_j / f_GB(r_ij),
    f_GB = sqrt(r^2 + R_i R_j exp(-r^2 / (4 R_i R_j)))                    (i = j: f = R_i)

with k = 332.0637 kcal A / (mol e^2), eps_in 1, eps_out 78.5 (water), q RDKit's Gasteiger charges
of every atom (hydrogens explicit) and R the Born radii, from the Hawkins-Cramer-Truhlar pairwise
descreening (HCT, J. Phys. Chem. 100, 19824 (1996); the form of OpenMM's reference GBSA code):
1/R_i = 1/rho_i - 1/2 sum_j H(r_ij, rho_i, s rho_j), rho = the van der Waals radius (RDKit's
``GetRvdw``, as ``solvation.atom_surface``) less 0.09 A, one descreening scale s = 0.8 for every
element. All of it is closed form on one conformer (``geometry.embed``: ETKDG, then MMFF): no
iteration, no solver. The surface is FreeSASA's (``solvation.atom_surface``) summed over the molecule.
A molecule RDKit cannot embed has NaN for the two conformer values (counted by the caller).
"""

from __future__ import annotations

import numpy as np

COULOMB = 332.0637  # kcal A / (mol e^2)
EPS_IN, EPS_OUT = 1.0, 78.5
HCT_SCALE = 0.8  # descreening scale; OBC's per-element values lie within 0.72-0.85
RADIUS_OFFSET = 0.09  # A: the dielectric offset of HCT and OBC
MAX_BORN_RADIUS = 50.0  # A: a fully descreened atom (1/R <= 0 in HCT's approximation) gets this
PHYSICS_NAMES: tuple[str, ...] = ("gb_polarization", "sasa", "logp", "tpsa", "hbd", "hba", "rotatable_bonds")


def born_radii(coords: np.ndarray, radii: np.ndarray, scale: float = HCT_SCALE,
               offset: float = RADIUS_OFFSET) -> np.ndarray:
    """HCT Born radii, (N,) in A, of atoms at ``coords`` (N, 3) A with van der Waals ``radii`` (N,) A."""
    rho = radii - offset  # (N,)
    s = scale * rho  # (N,) the descreening spheres
    r = np.linalg.norm(coords[:, None] - coords[None], axis=-1)  # (N, N)
    n = len(radii)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho_i, s_j = rho[:, None], s[None, :]  # (N, 1), (1, N)
        hit = (rho_i < r + s_j) & ~np.eye(n, dtype=bool)  # j's sphere reaches beyond i's
        low = 1.0 / np.maximum(rho_i, np.abs(r - s_j))
        up = 1.0 / (r + s_j)
        term = (low - up + 0.25 * r * (up**2 - low**2) + 0.5 / r * np.log(up / low)
                + 0.25 * s_j**2 / r * (low**2 - up**2))
        term = term + np.where(rho_i < s_j - r, 2.0 * (1.0 / rho_i - low), 0.0)  # i inside j's sphere
        inv = 1.0 / rho - 0.5 * np.where(hit, term, 0.0).sum(1)
    return 1.0 / np.maximum(inv, 1.0 / MAX_BORN_RADIUS)


def gb_energy(charges: np.ndarray, coords: np.ndarray, radii: np.ndarray, eps_in: float = EPS_IN,
              eps_out: float = EPS_OUT) -> float:
    """Still's generalized-Born polarization energy, kcal/mol, of ``charges`` (N,) e at ``coords``
    (N, 3) A with Born ``radii`` (N,) A."""
    r2 = ((coords[:, None] - coords[None]) ** 2).sum(-1)  # (N, N)
    rr = radii[:, None] * radii[None, :]
    f = np.sqrt(r2 + rr * np.exp(-r2 / (4.0 * rr)))  # (N, N); the diagonal is R_i
    return float(-0.5 * COULOMB * (1.0 / eps_in - 1.0 / eps_out) * (np.outer(charges, charges) / f).sum())


def gb_polarization(molh) -> float:
    """The GB energy of an embedded molecule with explicit hydrogens (``geometry.embed``'s); NaN
    when RDKit has no Gasteiger charge for one of its atoms."""
    from rdkit import Chem, rdBase
    from rdkit.Chem import rdPartialCharges

    m = Chem.Mol(molh)  # charges go on a copy
    with rdBase.BlockLogs():
        rdPartialCharges.ComputeGasteigerCharges(m)
    q = np.array([a.GetDoubleProp("_GasteigerCharge") for a in m.GetAtoms()])
    if not np.isfinite(q).all():
        return float("nan")
    table = Chem.GetPeriodicTable()
    radii = np.array([table.GetRvdw(a.GetAtomicNum()) for a in m.GetAtoms()])
    coords = m.GetConformer().GetPositions()
    return gb_energy(q, coords, born_radii(coords, radii))


def physics_descriptors(mol, molh=None) -> np.ndarray:
    """(7,) float64 in ``PHYSICS_NAMES`` order of an RDKit Mol (implicit hydrogens); ``molh``: its
    embedded form with explicit hydrogens, embedded here (``geometry.embed``) when not given. The GB
    energy (kcal/mol) and the surface (A^2) are NaN when the molecule cannot be embedded."""
    from vecset.encoders.graph.geometry import embed
    from vecset.encoders.graph.solvation import SURFACE_SCALE, atom_surface

    if molh is None:
        molh, _ = embed(mol)
    gb = sasa = float("nan")
    if molh is not None:
        gb = gb_polarization(molh)
        surface = atom_surface(molh, mol.GetNumAtoms())
        sasa = float("nan") if surface is None else float(surface.sum()) * SURFACE_SCALE
    return np.array([gb, sasa, *physics_descriptors_2d(mol)], dtype=np.float64)


# The molecule token's inputs (``physics_token``): each of ``PHYSICS_NAMES`` divided by a fixed
# scale of its size on small organic molecules (kcal/mol, A^2, logP units, A^2, counts), so that
# the values are of order one with no statistics of a training set (a predictor needs none),
# and a last entry 1 where the conformer values are missing (no conformer: they are 0 then).
PHYSICS_SCALE: tuple[float, ...] = (10.0, 100.0, 1.0, 50.0, 1.0, 1.0, 5.0)
PHYSICS_TOKEN_WIDTH: int = len(PHYSICS_NAMES) + 1


def physics_token(mol, molh) -> np.ndarray:
    """(``PHYSICS_TOKEN_WIDTH``,) float32: ``physics_descriptors`` over ``PHYSICS_SCALE``, NaN
    as 0, then the missing flag (1 where the GB energy or the surface is NaN). ``molh``: the
    molecule's embedded form with explicit hydrogens, or None (no conformer)."""
    values = physics_descriptors(mol, molh) if molh is not None else np.array(
        [np.nan, np.nan, *physics_descriptors_2d(mol)], dtype=np.float64)
    missing = float(not np.isfinite(values).all())
    scaled = np.nan_to_num(values / np.array(PHYSICS_SCALE), nan=0.0, posinf=0.0, neginf=0.0)
    return np.append(scaled, missing).astype(np.float32)


def physics_descriptors_2d(mol) -> list[float]:
    """The five 2-D entries of ``PHYSICS_NAMES`` (logP, TPSA, H-bond donors and acceptors,
    rotatable bonds), which need no conformer."""
    from rdkit.Chem import Crippen, rdMolDescriptors

    return [Crippen.MolLogP(mol), rdMolDescriptors.CalcTPSA(mol), rdMolDescriptors.CalcNumHBD(mol),
            rdMolDescriptors.CalcNumHBA(mol), rdMolDescriptors.CalcNumRotatableBonds(mol)]
