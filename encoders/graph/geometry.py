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

Several conformers per molecule (``conformer_tensors(conformers=k)``, k > 1; Uni-Mol, Zhou et al.
2023, trains on a random one of several each time a molecule is drawn): RDKit's
``EmbedMultipleConfs`` with the same ETKDG parameters and seed, then MMFF per conformer where it
converges. Its conformer 0 is the one ``EmbedMolecule`` gives with that seed (RDKit embeds one
conformer as the first of several; equal bit for bit on all of FreeSolv), so conformer 0 of k is
the single-conformer molecule's. A molecule with fewer than k conformers embedded keeps those it
got (counted: ``fewer_conformers``); with none, it falls back as above (ETKDG from random
coordinates, then the 2-D graph).
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


def _etkdg(seed: int):
    """ETKDGv3 parameters with ``seed`` and the capped attempts (``EMBED_ATTEMPTS``)."""
    from rdkit.Chem import AllChem

    params = AllChem.ETKDGv3()
    params.randomSeed = seed
    params.maxIterations = EMBED_ATTEMPTS
    return params


def _optimize(molh, conf_id: int = -1) -> int:
    """MMFF94 on conformer ``conf_id`` of ``molh`` (which has MMFF parameters): ``MMFF`` where it
    converges, else the ETKDG positions are put back and ``ETKDG``."""
    from rdkit.Chem import AllChem

    conf = molh.GetConformer(conf_id)
    before = conf.GetPositions()
    if AllChem.MMFFOptimizeMolecule(molh, maxIters=MMFF_ITERS, confId=conf_id) == 0:
        return MMFF
    for i, p in enumerate(before):  # not converged: a half-optimized geometry is no better than ETKDG's
        conf.SetAtomPosition(i, p.tolist())
    return ETKDG


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
        params = _etkdg(seed)
        if AllChem.EmbedMolecule(molh, params) < 0:
            # RDKit's advice for molecules whose first embedding fails: start from random coordinates
            params.useRandomCoords = True
            if AllChem.EmbedMolecule(molh, params) < 0:
                return None, FAILED
        status = _optimize(molh) if AllChem.MMFFHasAllMoleculeParams(molh) else ETKDG
    return molh, status


def embed_conformers(mol, conformers: int, seed: int = SEED) -> tuple[object | None, list[tuple[int, int]]]:
    """RDKit Mol (implicit hydrogens) -> (the Mol with explicit hydrogens and up to
    ``conformers`` conformers, or None when none could be embedded; (conformer id, status) of
    each embedded one, in RDKit's order: the first is ``embed``'s conformer).

    ``EmbedMultipleConfs`` with ``embed``'s parameters and seed, from random coordinates when
    it embeds none; then MMFF per conformer where it converges."""
    from rdkit import Chem, rdBase
    from rdkit.Chem import AllChem

    with rdBase.BlockLogs():
        molh = Chem.AddHs(mol)
        params = _etkdg(seed)
        ids = list(AllChem.EmbedMultipleConfs(molh, conformers, params))
        if not ids:
            params.useRandomCoords = True
            ids = list(AllChem.EmbedMultipleConfs(molh, conformers, params))
            if not ids:
                return None, []
        mmff = AllChem.MMFFHasAllMoleculeParams(molh)
        return molh, [(c, _optimize(molh, c) if mmff else ETKDG) for c in ids]


def heavy_atom_distances(molh, n_heavy: int, fragments: np.ndarray, conf_id: int = -1) -> np.ndarray:
    """(n_heavy, n_heavy) float32 Angstrom distances of the first ``n_heavy`` atoms of ``molh``'s
    conformer ``conf_id`` (-1: its first; RDKit's ``Get3DDistanceMatrix``), ``NO_DISTANCE``
    between atoms of different ``fragments`` (fragment index per heavy atom)."""
    from rdkit import Chem

    d = Chem.Get3DDistanceMatrix(molh, confId=conf_id)[:n_heavy, :n_heavy].astype(np.float32)
    d[fragments[:, None] != fragments[None, :]] = NO_DISTANCE
    return d


def conformer_tensors(mol, seed: int = SEED, surface: bool = False, conformers: int = 1,
                      physics: bool = False) -> dict[str, Tensor]:
    """One molecule's 3-D tensors for the featurization cache.

    Shapes (N heavy atoms, C <= ``conformers`` conformers embedded):
        dist3d (N, N) float32 Angstrom, ``NO_DISTANCE`` where there is none (see the module
        docstring), of conformer 0; geometry () long, conformer 0's status (``STATUS``). With
        ``conformers`` > 1: conformers3d (C, N, N) float32, every embedded conformer's distances
        (conformer 0 first; one all-``NO_DISTANCE`` matrix when none embeds, one 0 for a single
        atom). With ``surface``: surface (N,) float32, each heavy atom's solvent-accessible
        surface with its hydrogens' (``solvation.atom_surface``, on conformer 0 only; a single
        atom is embedded for it), 0 where there is no conformer; surface_missing () long, 1 then
        (counted by ``geometry_counts``). With ``physics``: physics (``PHYSICS_TOKEN_WIDTH``,)
        float32, the molecule token's values of conformer 0 (``physics.physics_token``).
    """
    from rdkit import Chem

    n = mol.GetNumAtoms()
    several = conformers > 1
    if n == 1:
        out = {"dist3d": torch.zeros(1, 1), "geometry": torch.tensor(SINGLE_ATOM)}
        if several:
            out["conformers3d"] = torch.zeros(1, 1, 1)
        molh = embed(mol, seed)[0] if surface or physics else None  # its distance needs none, these do
    else:
        if several:
            molh, embedded = embed_conformers(mol, conformers, seed)
        else:
            molh, status = embed(mol, seed)
            embedded = [(-1, status)]
        if molh is None:
            out = {"dist3d": torch.full((n, n), NO_DISTANCE), "geometry": torch.tensor(FAILED)}
            if several:
                out["conformers3d"] = torch.full((1, n, n), NO_DISTANCE)
        else:
            fragments = np.zeros(n, dtype=np.int64)
            for f, atoms in enumerate(Chem.GetMolFrags(mol)):
                fragments[list(atoms)] = f
            stack = [heavy_atom_distances(molh, n, fragments, c) for c, _ in embedded]
            out = {"dist3d": torch.from_numpy(stack[0]), "geometry": torch.tensor(embedded[0][1])}
            if several:
                out["conformers3d"] = torch.from_numpy(np.stack(stack))
    if surface:  # FreeSASA measures the first conformer (conformer 0)
        area = atom_surface(molh, n) if molh is not None else None
        out["surface"] = torch.zeros(n) if area is None else torch.from_numpy(area)
        out["surface_missing"] = torch.tensor(int(area is None))
    if physics:
        from vecset.encoders.graph.physics import physics_token

        out["physics"] = torch.from_numpy(physics_token(mol, molh))
    return out


def geometry_counts(graphs: list[dict[str, Tensor]], conformers: int = 1) -> dict[str, int]:
    """How many molecules got which geometry, over featurized graphs with ``dist3d``:
    ``embedded`` (with ``mmff`` of them MMFF-optimized: conformer 0), ``failed`` (2-D only),
    ``single_atom``, and ``multi_fragment`` (salts and mixtures: embedded, without 3-D
    distances between fragments); with a surface, ``no_surface`` (surface 0 and its indicator);
    with ``conformers`` > 1, ``fewer_conformers`` (embedded with fewer than ``conformers``)."""
    out = {"molecules": 0, "embedded": 0, "mmff": 0, "failed": 0, "single_atom": 0, "multi_fragment": 0}
    if conformers > 1:
        out["fewer_conformers"] = sum(int(g["geometry"]) in (ETKDG, MMFF) and g["conformers3d"].shape[0] < conformers
                                      for g in graphs)
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
