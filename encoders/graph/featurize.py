"""Node features (as in Chemprop: element, degree, charge, hybridization, hydrogens, aromaticity, ring), bond types, shortest-path distances and Laplacian eigenvectors: a graph's tensors, computed once per dataset."""

from __future__ import annotations

import networkx as nx
import numpy as np
import torch

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
# the solvation features, optional (``MoleculeFeaturizer(charges=..., surface=...)``; solvation.py)
CHARGE_NUMERIC: list[str] = ["charge"]
SURFACE_NUMERIC: list[str] = ["surface", "no_surface"]
BOND_TYPES: list[str] = ["SINGLE", "DOUBLE", "TRIPLE", "AROMATIC"]


def node_feature_width(categorical: dict[str, list], numeric: list[str]) -> int:
    """Columns of a node row: a one-hot per categorical attribute (its vocabulary and "other"),
    one per numeric attribute; 1 (the constant) with no attributes at all."""
    return sum(len(v) + 1 for v in categorical.values()) + len(numeric) or 1


def edge_type_count(edge_vocab: list) -> int:
    """Edge types of the pairwise bias: none, each type of the vocabulary, other."""
    return len(edge_vocab) + 2


def atom_numeric(charges: bool = False, surface: bool = False) -> list[str]:
    """The molecule featurizer's numeric atom attributes, the solvation ones included when asked."""
    return ATOM_NUMERIC + (CHARGE_NUMERIC if charges else []) + (SURFACE_NUMERIC if surface else [])


def atom_feature_width(charges: bool = False, surface: bool = False) -> int:
    """The molecule featurizer's node width: 42, one more with charges, two more with the surface."""
    return node_feature_width(ATOM_CATEGORICAL, atom_numeric(charges, surface))


# The default (atom) featurizer's widths, known without reading a molecule: the molecule data's
# links give them to the graph encoder's ``node_dim`` and ``num_edge_types`` when a config is parsed
ATOM_FEATURE_WIDTH: int = node_feature_width(ATOM_CATEGORICAL, ATOM_NUMERIC)  # 42
BOND_EDGE_TYPES: int = edge_type_count(BOND_TYPES)  # 6


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
        return node_feature_width(self.categorical, self.numeric)

    @property
    def num_edge_types(self) -> int:
        return edge_type_count(self.edge_vocab)

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
