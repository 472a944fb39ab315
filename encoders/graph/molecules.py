"""Molecules as graphs: SMILES -> RDKit molecule (RDKit's own error text on failure) -> networkx graph with atom and bond attributes; what a SMILES becomes once featurized (``Molecule``) or why it cannot be (``InvalidMolecule``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import networkx as nx
import numpy as np
from torch import Tensor


class InvalidMolecule(ValueError):
    """A SMILES that cannot become a graph; ``reason`` holds RDKit's own message."""

    def __init__(self, smiles: str, reason: str) -> None:
        super().__init__(f"invalid SMILES {smiles!r}: {reason}")
        self.smiles, self.reason = smiles, reason


@dataclass
class Molecule:
    """One SMILES, featurized: its graph tensors, RDKit's canonical SMILES of it (which molecule
    it is: the duplicate checks compare these) and, when asked for, RDKit's raw 2-D descriptors.

    Shapes (N atoms):
        graph: ``x`` (N, F) float, ``dist`` (N, N) long, ``edge`` (N, N) long, ``degree`` (N,)
        long, ``lap`` (N, k) float when ``lap_pe_k`` > 0 (see ``graph_tensors``);
        descriptors: (F_d,) float64, NaN where RDKit could not compute one.
    """

    smiles: str
    canonical_smiles: str
    graph: dict[str, Tensor]
    descriptors: np.ndarray | None = None

    def item(self, **fields) -> dict:
        """This molecule as a batch item for ``pad_graphs``: copies of its tensors and arrays (two
        items, or two data modules, share nothing), ``raw_desc``, ``smiles``, ``canonical_smiles``
        and ``fields`` (``id``, ``line``, ``y``, ...)."""
        item: dict = {k: v.clone() for k, v in self.graph.items()}
        if self.descriptors is not None:
            item["raw_desc"] = self.descriptors.copy()
        item["smiles"], item["canonical_smiles"] = self.smiles, self.canonical_smiles
        item.update(fields)
        return item


_STAMP = re.compile(r"^\[\d\d:\d\d:\d\d\]\s*")


def parse_smiles(smiles: str, max_atoms: int | None = None):
    """SMILES -> RDKit Mol, or ``InvalidMolecule`` with RDKit's reason (parse error, valence,
    kekulization), an empty SMILES, or more heavy atoms than ``max_atoms``."""
    from rdkit import Chem, rdBase

    if not isinstance(smiles, str) or not smiles.strip():
        raise InvalidMolecule(str(smiles), "empty SMILES")
    with rdBase.CaptureErrorLog() as cap:
        mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        lines = [_STAMP.sub("", ln).strip() for ln in cap.messages.splitlines() if ln.strip()]
        reason = lines[0] if lines else "RDKit could not parse it"
        raise InvalidMolecule(smiles, reason)
    n = mol.GetNumAtoms()
    if n == 0:
        raise InvalidMolecule(smiles, "no atoms")
    if max_atoms is not None and n > max_atoms:
        raise InvalidMolecule(smiles, f"{n} heavy atoms, more than max_atoms={max_atoms}")
    return mol


def mol_to_graph(mol) -> nx.Graph:
    """RDKit Mol -> networkx graph; node i is RDKit atom i (hydrogens implicit)."""
    g = nx.Graph()
    for a in mol.GetAtoms():
        g.add_node(
            a.GetIdx(), element=a.GetSymbol(), degree=a.GetDegree(), formal_charge=a.GetFormalCharge(),
            hybridization=str(a.GetHybridization()), num_hs=a.GetTotalNumHs(),
            aromatic=float(a.GetIsAromatic()), in_ring=float(a.IsInRing()), mass=a.GetMass() / 100.0,
        )
    for b in mol.GetBonds():
        g.add_edge(b.GetBeginAtomIdx(), b.GetEndAtomIdx(), bond_type=str(b.GetBondType()),
                   conjugated=float(b.GetIsConjugated()), in_ring=float(b.IsInRing()))
    return g


def smiles_to_graph(smiles: str, max_atoms: int | None = None) -> nx.Graph:
    """SMILES -> networkx graph with atom and bond attributes (see ``mol_to_graph``)."""
    return mol_to_graph(parse_smiles(smiles, max_atoms))
