"""3-D geometry of a molecule: one RDKit ETKDG conformer (Riniker & Landrum 2015, ETKDGv3), then
an MMFF94 optimization where it converges, as heavy-atom pairwise distances in Angstrom.

What a molecule's distances are when there is no meaningful 3-D distance is said in the tensor,
never by dropping the molecule: ``dist3d`` is -1 for a pair without one, which the encoder turns
into no 3-D bias (the 2-D graph's structure only):
- the embedding fails (ETKDG, then ETKDG from random coordinates; e.g. a strained ring such as
  cyclopropyne): every pair is -1;
- a salt or mixture (several fragments): pairs in different fragments are -1 (ETKDG places the
  fragments arbitrarily, so their distance carries nothing);
- a single heavy atom: its one distance, 0, needs no embedding.

``geometry_counts`` counts these over a data set for the report. Featurizing is deterministic:
ETKDG runs with the fixed ``randomSeed`` ``SEED``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from vecset.encoders.graph.solvation import atom_surface

SEED = 42  # ETKDG's randomSeed: the same conformer on every run and machine
# ETKDG's maxIterations (embedding attempts per try; RDKit's default is 10 x the atom count): a
# molecule that cannot be embedded spent minutes failing at the default (B3DB: 186 s of CPU for
# one steroid, the successful molecules about 0.5 s), so failures cost at most two capped tries
EMBED_ATTEMPTS = 200
MMFF_ITERS = 500  # MMFFOptimizeMolecule's maxIters; not converged then: the ETKDG conformer is kept
NO_DISTANCE = -1.0  # dist3d of a pair without a 3-D distance (and of padding)

# the per-molecule status kept beside dist3d (a long scalar, ``graph["geometry"]``)
FAILED, ETKDG, MMFF, SINGLE_ATOM = 0, 1, 2, 3
STATUS = {FAILED: "embedding failed (2-D only)", ETKDG: "ETKDG (MMFF did not converge or has no parameters)",
          MMFF: "ETKDG + MMFF", SINGLE_ATOM: "single heavy atom"}


def embed(mol, seed: int = SEED) -> tuple[object | None, int]:
    """RDKit Mol (implicit hydrogens) -> (the Mol with explicit hydrogens and one conformer, or
    None when embedding fails; the status: ``FAILED``, ``ETKDG`` or ``MMFF``).

    Hydrogens are added for the embedding (ETKDG needs them for sensible geometries) at indices
    after the heavy atoms, so heavy atom i stays atom i."""
    from rdkit import Chem, rdBase
    from rdkit.Chem import AllChem

    # RDKit's force-field typing warnings (e.g. "UFFTYPER: Unrecognized charge state") would
    # flood the console for thousands of molecules; what matters, a failure, is counted instead
    with rdBase.BlockLogs():
        molh = Chem.AddHs(mol)
        params = AllChem.ETKDGv3()
        params.randomSeed = seed
        params.maxIterations = EMBED_ATTEMPTS
        if AllChem.EmbedMolecule(molh, params) < 0:
            # RDKit's advice for molecules whose first embedding fails: start from random coordinates
            params.useRandomCoords = True
            if AllChem.EmbedMolecule(molh, params) < 0:
                return None, FAILED
        status = ETKDG
        if AllChem.MMFFHasAllMoleculeParams(molh):
            conf = molh.GetConformer()
            before = conf.GetPositions()
            if AllChem.MMFFOptimizeMolecule(molh, maxIters=MMFF_ITERS) == 0:
                status = MMFF
            else:  # not converged: a half-optimized geometry is no better than ETKDG's
                for i, p in enumerate(before):
                    conf.SetAtomPosition(i, p.tolist())
    return molh, status


def heavy_atom_distances(molh, n_heavy: int, fragments: np.ndarray) -> np.ndarray:
    """(n_heavy, n_heavy) float32 Angstrom distances of the first ``n_heavy`` atoms of ``molh``'s
    conformer (RDKit's ``Get3DDistanceMatrix``), ``NO_DISTANCE`` between atoms of different
    ``fragments`` (fragment index per heavy atom)."""
    from rdkit import Chem

    d = Chem.Get3DDistanceMatrix(molh)[:n_heavy, :n_heavy].astype(np.float32)
    d[fragments[:, None] != fragments[None, :]] = NO_DISTANCE
    return d


def conformer_tensors(mol, seed: int = SEED, surface: bool = False) -> dict[str, Tensor]:
    """One molecule's 3-D tensors for the featurization cache.

    Shapes (N heavy atoms):
        dist3d (N, N) float32 Angstrom, ``NO_DISTANCE`` where there is none (see the module
        docstring); geometry () long, the status (``STATUS``). With ``surface``: surface (N,)
        float32, each heavy atom's solvent-accessible surface with its hydrogens'
        (``solvation.atom_surface``; a single atom is embedded for it), 0 where there is no
        conformer; surface_missing () long, 1 then (counted by ``geometry_counts``).
    """
    from rdkit import Chem

    n = mol.GetNumAtoms()
    if n == 1:
        out = {"dist3d": torch.zeros(1, 1), "geometry": torch.tensor(SINGLE_ATOM)}
        molh = embed(mol, seed)[0] if surface else None  # its distance needs none, its surface does
    else:
        molh, status = embed(mol, seed)
        if molh is None:
            out = {"dist3d": torch.full((n, n), NO_DISTANCE), "geometry": torch.tensor(FAILED)}
        else:
            fragments = np.zeros(n, dtype=np.int64)
            for f, atoms in enumerate(Chem.GetMolFrags(mol)):
                fragments[list(atoms)] = f
            out = {"dist3d": torch.from_numpy(heavy_atom_distances(molh, n, fragments)),
                   "geometry": torch.tensor(status)}
    if surface:
        area = atom_surface(molh, n) if molh is not None else None
        out["surface"] = torch.zeros(n) if area is None else torch.from_numpy(area)
        out["surface_missing"] = torch.tensor(int(area is None))
    return out


def geometry_counts(graphs: list[dict[str, Tensor]]) -> dict[str, int]:
    """How many molecules got which geometry, over featurized graphs with ``dist3d``:
    ``embedded`` (with ``mmff`` of them MMFF-optimized), ``failed`` (2-D only),
    ``single_atom``, and ``multi_fragment`` (salts and mixtures: embedded, without 3-D
    distances between fragments); with a surface, ``no_surface`` (surface 0 and its indicator)."""
    out = {"molecules": 0, "embedded": 0, "mmff": 0, "failed": 0, "single_atom": 0, "multi_fragment": 0}
    if graphs and "surface_missing" in graphs[0]:
        out["no_surface"] = sum(int(g["surface_missing"]) for g in graphs)
    for g in graphs:
        status = int(g["geometry"])
        out["molecules"] += 1
        out["embedded"] += status in (ETKDG, MMFF)
        out["mmff"] += status == MMFF
        out["failed"] += status == FAILED
        out["single_atom"] += status == SINGLE_ATOM
        out["multi_fragment"] += status in (ETKDG, MMFF) and bool((g["dist3d"] < 0).any())
    return out
