"""The molecule reader: a SMILES string -> a featurized ``Molecule``, and a CSV of SMILES with
targets or class labels -> labelled batch items, every unusable row counted with its line and
the reason, every malformed file an error naming the file and line.

Featurizing is the slow part (RDKit, all-pairs shortest paths, 217 descriptors: B3DB's 7,800
molecules take about a minute; 3-D conformers, ``geometry=True``, far longer: docs/molecules.md
has the measured cost), so ``featurize_smiles`` reads a ``FeatureCache`` when it has the same
SMILES featurized with the same settings, and reports progress otherwise."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np
import torch

from vecset.encoders.files import read_csv_rows
from vecset.encoders.graph.cache import FeatureCache
from vecset.encoders.graph.collate import pad_graphs
from vecset.encoders.graph.descriptors import molecule_descriptors
from vecset.encoders.graph.featurize import NodeFeaturizer, atom_numeric, graph_tensors
from vecset.encoders.graph.geometry import FAILED, SEED, conformer_tensors, geometry_counts
from vecset.encoders.graph.identity import mol_canonical_smiles
from vecset.encoders.graph.molecules import InvalidMolecule, Molecule, mol_to_graph, parse_smiles
from vecset.encoders.graph.solvation import gasteiger_charges
from vecset.encoders.graph.structure import GraphStructure

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

SHOWN_FAILED = 3  # molecules without a conformer named in the log; MoleculeTable.geometry counts them all

# (the SMILES to featurize, a description) -> the same SMILES, while showing progress
Progress = Callable[[Sequence[str], str], Iterable[str]]


class MoleculeFeaturizer:
    """SMILES -> ``Molecule``: RDKit parsing, Chemprop-style atom features, shortest-path
    distances, bond types, degrees, optional Laplacian eigenvectors and RDKit descriptors.

    Args:
        max_atoms: a molecule with more heavy atoms is an ``InvalidMolecule`` (None: no limit).
        max_dist: shortest-path distances are clipped here; ``max_dist + 1`` is unreachable.
        lap_pe_k: Laplacian eigenvectors per graph (0: none).
        descriptors: also compute RDKit's 2-D descriptors (``molecule_descriptors``).
        geometry: also embed one 3-D conformer per molecule (ETKDG with a fixed seed, then MMFF
            where it converges) and keep its heavy-atom distances, ``dist3d`` (``geometry.py``;
            a molecule that cannot be embedded keeps its 2-D graph, counted in
            ``MoleculeTable.geometry``).
        charges: one more numeric atom feature, ``charge``: the atom's Gasteiger charge with its
            hydrogens' (``solvation.gasteiger_charges``; an atom RDKit gives NaN is 0, counted in
            ``MoleculeTable.charges_failed``).
        surface: two more, ``surface`` (the atom's solvent-accessible surface with its hydrogens',
            A^2 / 100, from the conformer: ``solvation.atom_surface``) and ``no_surface`` (1 where
            there is no conformer, the surface then 0; counted in ``MoleculeTable.geometry``).
            Needs ``geometry``.
        conformers: with ``geometry``, the conformers embedded per molecule (``geometry.py``): 1
            (the default) keeps one; k > 1 keeps all k distance matrices as ``conformers3d``
            (C, N, N), conformer 0 (the single-conformer one) also as ``dist3d``, for a random
            one per training draw; molecules with fewer than k are counted in
            ``MoleculeTable.geometry`` (``fewer_conformers``). The surface stays conformer 0's.
        physics: with ``geometry``, one vector per molecule, ``physics`` (``PHYSICS_TOKEN_WIDTH``:
            the generalized-Born polarization energy and solvent-accessible surface of conformer 0,
            logP, TPSA, H-bond donors and acceptors, rotatable bonds, each over a fixed scale, and a
            flag where there is no conformer: ``physics.physics_token``), which the graph encoder's
            ``physics_token`` makes one more vector of the set.

    ``structure`` is what the graph encoder's tables must fit (handed over in the DataSpec),
    ``settings`` everything the tensors depend on (the cache's key).
    """

    def __init__(self, max_atoms: int | None = 100, max_dist: int = 8, lap_pe_k: int = 0,
                 descriptors: bool = False, geometry: bool = False, charges: bool = False,
                 surface: bool = False, conformers: int = 1, physics: bool = False) -> None:
        if isinstance(conformers, bool) or not isinstance(conformers, int) or conformers < 1:
            raise ValueError(f"conformers must be a whole number of at least 1 (conformers embedded per molecule), "
                             f"got {conformers!r}")
        if conformers > 1 and not geometry:
            raise ValueError(f"conformers: {conformers} needs geometry: true (the conformers are 3-D embeddings)")
        if surface and not geometry:
            raise ValueError("surface: true needs geometry: true (the solvent-accessible surface is measured on "
                             "the 3-D conformer that geometry embeds)")
        if physics and not geometry:
            raise ValueError("physics: true needs geometry: true (its generalized-Born energy and surface are "
                             "measured on the 3-D conformer that geometry embeds)")
        self.max_atoms, self.max_dist, self.lap_pe_k, self.descriptors = max_atoms, max_dist, lap_pe_k, descriptors
        self.geometry, self.charges, self.surface, self.conformers = geometry, charges, surface, conformers
        self.physics = physics
        self.nodes = NodeFeaturizer(numeric=atom_numeric(charges, surface))

    @property
    def structure(self) -> GraphStructure:
        return GraphStructure(max_dist=self.max_dist, lap_pe_k=self.lap_pe_k, node_dim=self.nodes.dim,
                              num_edge_types=self.nodes.num_edge_types, geometry=self.geometry,
                              physics=self.physics)

    def settings(self) -> dict:
        n = self.nodes
        return {"max_atoms": self.max_atoms, "max_dist": self.max_dist, "lap_pe_k": self.lap_pe_k,
                "descriptors": self.descriptors, "categorical": n.categorical, "numeric": n.numeric,
                "edge_attribute": n.edge_attribute, "edge_vocab": n.edge_vocab,
                **({"geometry": "etkdg_mmff", "geometry_seed": SEED, "conformers": self.conformers}
                   if self.geometry else {}),
                **({"charges": "gasteiger"} if self.charges else {}),
                **({"surface": "freesasa_rvdw"} if self.surface else {}),
                **({"physics": "gb_hct_sasa_2d_scaled"} if self.physics else {})}

    def one_conformer(self) -> MoleculeFeaturizer:
        """This featurizer with ``conformers`` 1: conformer 0 alone (prediction needs no others)."""
        if self.conformers == 1:
            return self
        return MoleculeFeaturizer(self.max_atoms, self.max_dist, self.lap_pe_k, self.descriptors, self.geometry,
                                  self.charges, self.surface, physics=self.physics)

    def collate(self, items: list[dict]) -> dict:
        """A batch of this featurizer's items: ``pad_graphs`` with its "unreachable" (``max_dist + 1``)."""
        return pad_graphs(items, unreachable=self.max_dist + 1)

    def __call__(self, smiles: str) -> Molecule:
        """One SMILES featurized; ``InvalidMolecule`` with RDKit's reason when it cannot be."""
        mol = parse_smiles(smiles, self.max_atoms)
        canonical = mol_canonical_smiles(mol)  # from the one parse, before anything else touches the molecule
        g = mol_to_graph(mol)
        extra: dict = conformer_tensors(mol, surface=self.surface, conformers=self.conformers,
                                        physics=self.physics) if self.geometry else {}
        if self.charges:
            charge, failed = gasteiger_charges(mol)
            nx.set_node_attributes(g, dict(enumerate(charge.tolist())), "charge")
            extra["charges_failed"] = torch.tensor(failed)
        if self.surface:  # node features now; surface_missing stays, for the count
            nx.set_node_attributes(g, dict(enumerate(extra.pop("surface").tolist())), "surface")
            nx.set_node_attributes(g, float(extra["surface_missing"]), "no_surface")
        graph = graph_tensors(g, self.nodes, self.max_dist, self.lap_pe_k) | extra
        return Molecule(smiles, canonical, graph, molecule_descriptors(mol) if self.descriptors else None)


def featurize_smiles(smiles: Iterable[str], featurizer: MoleculeFeaturizer, cache: FeatureCache | None = None,
                     progress: Progress | None = None, source: str = "") -> dict[str, Molecule | InvalidMolecule]:
    """Each distinct SMILES featurized, or the ``InvalidMolecule`` saying why it cannot be.

    With a ``cache`` holding these SMILES featurized with these settings (and this RDKit and
    featurization code), the result is read from it and nothing is featurized; otherwise every
    SMILES is featurized (``progress`` wrapping the loop, described by ``source``) and the result
    written to the cache for the next run.
    """
    distinct = list(dict.fromkeys(smiles))
    key = cache.key(distinct, featurizer.settings()) if cache is not None else None
    if cache is not None:
        found = cache.load(key, distinct)
        if found is not None:
            return found
    out: dict[str, Molecule | InvalidMolecule] = {}
    for s in progress(distinct, f"featurizing {source or 'molecules'}") if progress else distinct:
        try:
            out[s] = featurizer(s)
        except InvalidMolecule as e:
            out[s] = e
    if cache is not None:
        cache.save(key, out, source)
    return out


@dataclass
class MoleculeTable:
    """What ``read_molecule_csv`` made of a file.

    ``items``: one batch item per usable row (``Molecule.item`` with ``id`` = the data row's
    index, ``line`` = the file line it starts on, ``y`` when the file is labelled and
    ``split_value`` with a ``split_column``); ``skipped``: ``{"line", "smiles", "reason"}`` of
    every row that is not used; ``rows``: the file's data rows; ``geometry``: with a featurizer
    that embeds conformers, how many of the used molecules got which geometry
    (``geometry_counts``; with the surface, ``no_surface`` too; with several conformers,
    ``fewer_conformers``), else None; ``charges_failed``:
    with charges, the atoms of the used molecules whose Gasteiger charge RDKit could not compute
    (set to 0), else None.
    """

    path: Path
    items: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    rows: int = 0
    geometry: dict[str, int] | None = None
    charges_failed: int | None = None


def _report_geometry(table: MoleculeTable, conformers: int = 1) -> None:
    """Count the used molecules' geometries into ``table.geometry`` and log them; those without
    a conformer (their 2-D graph only) as a warning naming the first few."""
    counts = geometry_counts(table.items, conformers)
    failed = [it["smiles"] for it in table.items if int(it["geometry"]) == FAILED]
    table.geometry = counts
    text = (f"{table.path}: 3-D conformers for {counts['embedded']} of {counts['molecules']} molecules "
            f"({counts['mmff']} MMFF-optimized), {counts['single_atom']} single atoms (distance 0), "
            f"{counts['multi_fragment']} with several fragments (no 3-D bias between fragments), "
            f"{counts['failed']} that RDKit could not embed (2-D graph only)"
            + (f", {counts['no_surface']} without a solvent-accessible surface (0, flagged by no_surface)"
               if "no_surface" in counts else "")
            + (f", {counts['fewer_conformers']} embedded with fewer than {conformers} conformers (those embedded "
               "used)" if "fewer_conformers" in counts else ""))
    if failed:
        log.warning("%s: %s%s", text, ", ".join(map(repr, failed[:SHOWN_FAILED])),
                    " ..." if len(failed) > SHOWN_FAILED else "")
    else:
        log.info(text)


def _report_charges(table: MoleculeTable) -> None:
    """Count the used molecules' atoms without a Gasteiger charge into ``table.charges_failed``; a
    warning naming the first few molecules when there are any."""
    failed = [it for it in table.items if int(it["charges_failed"])]
    table.charges_failed = sum(int(it["charges_failed"]) for it in failed)
    if failed:
        log.warning("%s: %d atoms in %d molecules have no Gasteiger charge (RDKit gives NaN for their element; "
                    "charge 0): %s%s", table.path, table.charges_failed, len(failed),
                    ", ".join(repr(it["smiles"]) for it in failed[:SHOWN_FAILED]),
                    " ..." if len(failed) > SHOWN_FAILED else "")


def _target_problem(df: pd.DataFrame, row: int, names: list[str], y: np.ndarray) -> str | None:
    """Why the targets ``y`` (T,) of data row ``row`` cannot be used, or None."""
    with np.errstate(over="ignore"):  # the batch holds float32: 1e39 is finite here but inf there
        as_float32 = y.astype(np.float32)
    for finite, why in ((np.isfinite(y), "missing or non-numeric target"),
                        (np.isfinite(as_float32), "target out of float32 range")):
        if not finite.all():
            bad = [f"{c}={df[c].iat[row]!r}" for c, ok in zip(names, finite, strict=True) if not ok]
            return f"{why} ({', '.join(bad)})"
    return None


def _class_indices(path: Path, df: pd.DataFrame, lines: list[int], column: str, classes: list[str]) -> np.ndarray:
    """Class index per row (-1: empty label, skipped); a value outside ``classes`` is an error."""
    values = df[column].str.strip()
    index = {c: i for i, c in enumerate(classes)}
    bad: dict[str, list[int]] = {}
    for row, v in enumerate(values):
        if v and v not in index:
            bad.setdefault(v, []).append(lines[row])
    if bad:
        listed = "; ".join(f"{v!r} ({len(ls)} rows, line{'s' if len(ls) > 1 else ''} "
                           f"{', '.join(map(str, ls[:5]))}{' ...' if len(ls) > 5 else ''})"
                           for v, ls in sorted(bad.items()))
        raise ValueError(f"{path}: column {column!r} holds values other than the declared "
                         f"classes {classes}: {listed}")
    return np.array([index.get(v, -1) for v in values], dtype=np.int64)


def read_molecule_csv(path: str | Path, featurizer: MoleculeFeaturizer, smiles_column: str = "smiles",
                      target_columns: Sequence[str] = (), label_column: str | None = None,
                      classes: Sequence[str] | None = None, split_column: str | None = None,
                      cache: FeatureCache | None = None, progress: Progress | None = None) -> MoleculeTable:
    """A CSV of SMILES -> featurized, labelled items, and the rows that cannot be used.

    Labelled by ``target_columns`` (regression: ``y`` (T,) float32 in the file's units) or by
    ``label_column`` with its ``classes`` (``y`` the class index, a long scalar); neither: an
    unlabelled file (what ``vecset predict`` reads). A row is skipped, with its line and reason,
    for a missing or non-numeric target, one beyond float32, an empty class label, or a SMILES
    that RDKit rejects, that is empty or that has more than ``max_atoms`` heavy atoms. A missing
    file, a column not in it, a class label other than ``classes``, and what ``read_csv_rows``
    refuses (duplicate columns, ragged rows, invalid UTF-8) are errors naming the file.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"molecule CSV not found: {path}")
    targets, labelled = list(target_columns), label_column is not None
    df, lines = read_csv_rows(path)
    columns = [smiles_column, *targets, *([label_column] if labelled else []), *([split_column] if split_column else [])]
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: column(s) {missing} not in the file; its columns are {list(df.columns)}")
    import pandas as pd  # here: a second to import, which featurizing one SMILES (a predictor) does not need

    values = df[targets].apply(lambda c: pd.to_numeric(c.str.strip(), errors="coerce"))
    labels = _class_indices(path, df, lines, label_column, list(classes or [])) if labelled else None
    smiles = [s.strip() for s in df[smiles_column]]
    molecules = featurize_smiles(smiles, featurizer, cache, progress, source=path.name)
    table = MoleculeTable(path, rows=len(df))
    for row, smi in enumerate(smiles):
        fields: dict = {"id": row, "line": lines[row]}
        reason = None
        if labels is not None:
            reason = "missing class label" if labels[row] < 0 else None
            fields["y"] = torch.tensor(labels[row])
        elif targets:
            y = values.iloc[row].to_numpy(dtype=np.float64)
            reason = _target_problem(df, row, targets, y)
            fields["y"] = torch.tensor(y, dtype=torch.float32)
        molecule = molecules[smi]
        if reason is None and isinstance(molecule, InvalidMolecule):
            reason = molecule.reason
        if reason is not None:
            table.skipped.append({"line": lines[row], "smiles": smi, "reason": reason})
            continue
        if split_column:
            fields["split_value"] = df[split_column].iat[row].strip().lower()
        table.items.append(molecule.item(**fields))
    if featurizer.geometry:
        _report_geometry(table, featurizer.conformers)
    if featurizer.charges:
        _report_charges(table)
    return table
