"""Graphs as sets of node vectors: SMILES -> networkx graph -> node features + pairwise bias.

- Atoms/bonds as a graph, atom features as in Chemprop (Yang et al. 2019, "Analyzing Learned
  Molecular Representations for Property Prediction"): element, degree, formal charge,
  hybridization, hydrogen count, aromaticity, ring membership; bond type, conjugation, ring.
- Structure into attention, two modes:
  ``neighbours``: a node attends only to its bonded neighbours and itself (a bool
  ``VectorSet.bias``; Velickovic et al. 2018, GAT);
  ``all_pairs``: every node attends to every node with a learned per-head bias per
  shortest-path distance and per bond type of directly bonded pairs, plus a degree
  (centrality) embedding added to the node vectors (Ying et al. 2021, "Do Transformers
  Really Perform Bad for Graph Representation?", Graphormer).
- Optional Laplacian-eigenvector positional encoding with random sign flips during training
  (Dwivedi & Bresson 2020, "A Generalization of Transformer Networks to Graphs").
- Optional molecule-level RDKit 2-D descriptors for ``SequenceHead(extra_features=...)``
  (Chemprop's ``rdkit_2d`` feature generator).

Featurization (``graph_tensors``) is plain numpy/torch and runs once per dataset in a
DataModule's ``setup``; the encoder only embeds the cached tensors.
"""

from __future__ import annotations

import re
from typing import Literal

import networkx as nx
import numpy as np
import torch
from torch import Tensor, nn

from backbone.vectorset import VectorSet

# -- molecules as networkx graphs ------------------------------------------------------

# Categorical atom attributes and their vocabularies; a value outside a vocabulary goes to
# an extra "other" slot (never an error: rare elements still featurize).
ATOM_CATEGORICAL: dict[str, list] = {
    "element": ["H", "B", "C", "N", "O", "F", "Si", "P", "S", "Cl", "Br", "I"],
    "degree": [0, 1, 2, 3, 4, 5],
    "formal_charge": [-2, -1, 0, 1, 2],
    "hybridization": ["S", "SP", "SP2", "SP3", "SP3D", "SP3D2"],
    "num_hs": [0, 1, 2, 3, 4],
}
ATOM_NUMERIC: list[str] = ["aromatic", "in_ring", "mass"]
BOND_TYPES: list[str] = ["SINGLE", "DOUBLE", "TRIPLE", "AROMATIC"]


class InvalidMolecule(ValueError):
    """A SMILES that cannot become a graph; ``reason`` holds RDKit's own message."""

    def __init__(self, smiles: str, reason: str) -> None:
        super().__init__(f"invalid SMILES {smiles!r}: {reason}")
        self.smiles, self.reason = smiles, reason


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


def descriptor_names() -> list[str]:
    """Names of RDKit's 2-D descriptors, in the order ``molecule_descriptors`` returns them."""
    from rdkit.Chem import Descriptors

    return [name for name, _ in Descriptors._descList]


def molecule_descriptors(mol) -> np.ndarray:
    """RDKit's 2-D descriptors of one molecule, (F,) float64; failures and infinities are NaN
    (the DataModule standardizes with training statistics and fills NaN with the mean)."""
    from rdkit.Chem import Descriptors

    vals = Descriptors.CalcMolDescriptors(mol, missingVal=float("nan"), silent=True)
    out = np.array([vals[name] for name in descriptor_names()], dtype=np.float64)
    out[~np.isfinite(out)] = np.nan
    return out


# -- networkx graph -> tensors --------------------------------------------------------


class NodeFeaturizer:
    """networkx node attributes -> one row of numbers per node.

    Args:
        categorical: attribute -> vocabulary; one-hot with an extra "other" slot.
        numeric: attributes used as they are (bools as 0/1).
        edge_attribute: the edge attribute whose value picks the bond-type bias.
        edge_vocab: its vocabulary (index 0 means "no edge", the last "other").

    A node missing a named attribute is an error naming the node and the attribute. With no
    attributes at all every node gets the constant 1 (structure then comes from the bias,
    degrees and positional encodings).
    """

    def __init__(self, categorical: dict[str, list] | None = None, numeric: list[str] | None = None,
                 edge_attribute: str | None = "bond_type", edge_vocab: list | None = None) -> None:
        self.categorical = dict(ATOM_CATEGORICAL if categorical is None else categorical)
        self.numeric = list(ATOM_NUMERIC if numeric is None else numeric)
        self.edge_attribute = edge_attribute
        self.edge_vocab = list(BOND_TYPES if edge_vocab is None else edge_vocab)

    @property
    def dim(self) -> int:
        d = sum(len(v) + 1 for v in self.categorical.values()) + len(self.numeric)
        return d if d else 1

    @property
    def num_edge_types(self) -> int:
        return len(self.edge_vocab) + 2  # none, each type, other

    def node_features(self, g: nx.Graph) -> np.ndarray:
        """(N, dim) float32, nodes in ``list(g.nodes)`` order."""
        nodes = list(g.nodes)
        if not self.categorical and not self.numeric:
            return np.ones((len(nodes), 1), dtype=np.float32)
        out = np.zeros((len(nodes), self.dim), dtype=np.float32)
        for i, n in enumerate(nodes):
            attrs = g.nodes[n]
            col = 0
            for name, vocab in self.categorical.items():
                if name not in attrs:
                    raise ValueError(f"node {n!r} has no attribute {name!r} (has {sorted(attrs)})")
                v = attrs[name]
                out[i, col + (vocab.index(v) if v in vocab else len(vocab))] = 1.0
                col += len(vocab) + 1
            for name in self.numeric:
                if name not in attrs:
                    raise ValueError(f"node {n!r} has no attribute {name!r} (has {sorted(attrs)})")
                out[i, col] = float(attrs[name])
                col += 1
        return out

    def edge_types(self, g: nx.Graph, index: dict) -> np.ndarray:
        """(N, N) int64: 0 no edge, 1..len(vocab) the edge's type, len(vocab)+1 other."""
        n = g.number_of_nodes()
        out = np.zeros((n, n), dtype=np.int64)
        for u, v, attrs in g.edges(data=True):
            if self.edge_attribute is None:
                t = 1
            else:
                val = attrs.get(self.edge_attribute)
                t = self.edge_vocab.index(val) + 1 if val in self.edge_vocab else len(self.edge_vocab) + 1
            out[index[u], index[v]] = out[index[v], index[u]] = t
        return out


def laplacian_pe(g: nx.Graph, k: int) -> np.ndarray:
    """(N, k) eigenvectors of the symmetric normalized Laplacian for the k smallest
    eigenvalues after the first (the trivial one); zero-padded when N - 1 < k."""
    n = g.number_of_nodes()
    out = np.zeros((n, k), dtype=np.float32)
    if n < 2 or k == 0:
        return out
    lap = nx.normalized_laplacian_matrix(g, nodelist=list(g.nodes)).toarray()
    _, vecs = np.linalg.eigh(lap)  # ascending eigenvalues
    take = vecs[:, 1 : k + 1]
    out[:, : take.shape[1]] = take
    return out


def graph_tensors(g: nx.Graph, featurizer: NodeFeaturizer, max_dist: int = 8, lap_pe_k: int = 0) -> dict:
    """One graph's cached tensors.

    Shapes (N nodes):
        x (N, F) float; dist (N, N) long, shortest-path length clipped at ``max_dist``,
        ``max_dist + 1`` for unreachable pairs (disconnected graphs, e.g. salts);
        edge (N, N) long bond types (0 = not bonded); degree (N,) long; lap (N, k) float.
    """
    nodes = list(g.nodes)
    n = len(nodes)
    if n == 0:
        raise ValueError("a graph needs at least one node")
    index = {v: i for i, v in enumerate(nodes)}
    dist = np.full((n, n), max_dist + 1, dtype=np.int64)
    for src, lengths in nx.all_pairs_shortest_path_length(g):
        for dst, d in lengths.items():
            dist[index[src], index[dst]] = min(d, max_dist)
    out = {
        "x": torch.from_numpy(featurizer.node_features(g)),
        "dist": torch.from_numpy(dist),
        "edge": torch.from_numpy(featurizer.edge_types(g, index)),
        "degree": torch.tensor([g.degree(v) for v in nodes], dtype=torch.long),
    }
    if lap_pe_k:
        out["lap"] = torch.from_numpy(laplacian_pe(g, lap_pe_k))
    return out


def pad_graphs(items: list[dict], unreachable: int, pad_label: int = -100) -> dict:
    """Collate cached graph tensors into a padded batch.

    Each item holds ``graph_tensors`` output plus ``"id"`` and optionally ``"y"`` (a (T,)
    float vector per graph, or a (n,) long label per node) and ``"features"`` (F,).

    Returns ``x`` (B, N, F), ``mask`` (B, N) bool, ``dist`` (B, N, N) long (padding =
    ``unreachable``), ``edge`` (B, N, N), ``degree`` (B, N), ``lap`` (B, N, k), ``ids`` (B,),
    ``y``, ``features`` (B, F).
    """
    if not items:
        raise ValueError("cannot collate an empty batch")
    B = len(items)
    N = max(it["x"].shape[0] for it in items)
    F = items[0]["x"].shape[1]
    batch = {
        "x": torch.zeros(B, N, F),
        "mask": torch.zeros(B, N, dtype=torch.bool),
        "dist": torch.full((B, N, N), unreachable, dtype=torch.long),
        "edge": torch.zeros(B, N, N, dtype=torch.long),
        "degree": torch.zeros(B, N, dtype=torch.long),
        "ids": torch.tensor([int(it["id"]) for it in items]),
    }
    has_lap = "lap" in items[0]
    if has_lap:
        batch["lap"] = torch.zeros(B, N, items[0]["lap"].shape[1])
    for i, it in enumerate(items):
        n = it["x"].shape[0]
        batch["x"][i, :n] = it["x"]
        batch["mask"][i, :n] = True
        batch["dist"][i, :n, :n] = it["dist"]
        batch["edge"][i, :n, :n] = it["edge"]
        batch["degree"][i, :n] = it["degree"]
        if has_lap:
            batch["lap"][i, :n] = it["lap"]
    if "y" in items[0]:
        ys = [torch.as_tensor(it["y"]) for it in items]
        if ys[0].dtype == torch.long:  # one label per node
            y = torch.full((B, N), pad_label, dtype=torch.long)
            for i, t in enumerate(ys):
                y[i, : len(t)] = t
            batch["y"] = y
        else:
            batch["y"] = torch.stack(ys).float()
    if "features" in items[0]:
        batch["features"] = torch.stack([torch.as_tensor(it["features"]) for it in items]).float()
    return batch


# -- the encoder --------------------------------------------------------------------------

GraphAttention = Literal["neighbours", "all_pairs", "none"]


class GraphEncoder(nn.Module):
    """Node features -> d_model vectors, with the graph's structure as attention bias.

    Args:
        d_model: output width D.
        node_dim: input node feature width F (``NodeFeaturizer().dim`` for molecules: 42).
        attention: ``neighbours`` (bool bias: a node sees its neighbours and itself),
            ``all_pairs`` (float per-head bias from shortest-path distance and bond type),
            ``none`` (no structure in attention; a plain set).
        heads: number of attention heads H of the backbone (the bias is per head).
        max_dist: distances above are clipped; ``max_dist + 1`` means unreachable.
        num_edge_types: size of the bond-type table (``NodeFeaturizer().num_edge_types``).
        max_degree: degrees above share the last embedding row (0 disables the embedding).
        lap_pe_k: number of Laplacian eigenvectors (0: none).
        lap_sign_flip: flip eigenvector signs at random per graph in training, since an
            eigenvector's sign is arbitrary (off for one fixed graph, e.g. node labeling,
            where the sign is the same at training and prediction time).

    Shapes:
        batch["x"] (B, N, F), batch["mask"] (B, N), batch["dist"]/["edge"] (B, N, N) long,
        batch["degree"] (B, N) long, batch["lap"] (B, N, k)
        -> VectorSet x (B, N, D), bias (B, N, N) bool or (B, H, N, N) float.
    """

    def __init__(self, d_model: int, node_dim: int = 42, attention: GraphAttention = "all_pairs",
                 heads: int = 4, max_dist: int = 8, num_edge_types: int = 6, max_degree: int = 6,
                 lap_pe_k: int = 0, lap_sign_flip: bool = True) -> None:
        super().__init__()
        self.lap_sign_flip = lap_sign_flip
        if attention not in ("neighbours", "all_pairs", "none"):
            raise ValueError(f"attention must be 'neighbours', 'all_pairs' or 'none', got {attention!r}")
        if heads < 1:
            raise ValueError(f"heads must be >= 1 (the backbone's attention heads), got {heads}")
        self.node_dim, self.attention, self.heads = node_dim, attention, heads
        self.max_dist, self.max_degree, self.lap_pe_k = max_dist, max_degree, lap_pe_k
        self.proj = nn.Linear(node_dim, d_model)
        self.degree_emb = nn.Embedding(max_degree + 1, d_model) if max_degree > 0 else None
        if self.degree_emb is not None:
            # small, like a learned positional table: a unit-normal table would drown the
            # atom features and the eigenvectors (entries ~ 1/sqrt(N)) at the start
            nn.init.normal_(self.degree_emb.weight, std=0.02)
        self.lap_proj = nn.Linear(lap_pe_k, d_model) if lap_pe_k > 0 else None
        if attention == "all_pairs":
            # distances 0..max_dist, max_dist+1 = unreachable; zero init: training starts from
            # plain attention and learns how much structure matters
            self.dist_bias = nn.Embedding(max_dist + 2, heads)
            self.edge_bias = nn.Embedding(num_edge_types, heads)
            nn.init.zeros_(self.dist_bias.weight)
            nn.init.zeros_(self.edge_bias.weight)

    def structure_bias(self, batch: dict) -> Tensor | None:
        dist, mask = batch["dist"], batch["mask"]
        if self.attention == "none":
            return None
        if self.attention == "neighbours":
            pair = mask[:, :, None] & mask[:, None, :]
            return (dist == 1) & pair  # (B, N, N); the attention adds the diagonal itself
        d = dist.clamp(max=self.max_dist + 1)
        bias = self.dist_bias(d) + self.edge_bias(batch["edge"])  # (B, N, N, H)
        return bias.permute(0, 3, 1, 2)  # (B, H, N, N)

    def forward(self, batch: dict) -> VectorSet:
        x, mask = batch["x"], batch["mask"]
        if x.shape[-1] != self.node_dim:
            raise ValueError(f"GraphEncoder expects node features of width node_dim={self.node_dim}, "
                             f"got {x.shape[-1]}")
        h = self.proj(x)  # (B, N, D)
        if self.degree_emb is not None:
            h = h + self.degree_emb(batch["degree"].clamp(max=self.max_degree))
        if self.lap_proj is not None:
            lap = batch["lap"]  # (B, N, k)
            if lap.shape[-1] != self.lap_pe_k:
                raise ValueError(f"GraphEncoder(lap_pe_k={self.lap_pe_k}) got {lap.shape[-1]} eigenvectors; "
                                 "set the DataModule's lap_pe_k to match")
            if self.training and self.lap_sign_flip:
                sign = torch.randint(0, 2, (lap.shape[0], 1, lap.shape[2]), device=lap.device) * 2 - 1
                lap = lap * sign
            h = h + self.lap_proj(lap)
        h = h * mask[..., None].to(h.dtype)
        return VectorSet(x=h, mask=mask, bias=self.structure_bias(batch))
