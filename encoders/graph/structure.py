"""GraphStructure: how a graph data module made its structure tensors, handed to the graph
encoder in ``DataSpec.structure`` so that its tables are checked against them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GraphStructure:
    """How a graph data module made its structure tensors, which a graph encoder's tables must
    fit: the settings are the data's (they decide the tensors), the encoder checks its own.

    Args:
        max_dist: shortest-path distances clipped at ``max_dist``; ``max_dist + 1`` is unreachable.
        lap_pe_k: Laplacian eigenvectors per node (0: none).
        node_dim: node feature width F.
        num_edge_types: edge types, "no edge" and "other" included.
        geometry: the graphs carry 3-D distances (``dist3d``, from one conformer per molecule).
        physics: each graph carries one ``physics`` vector (``physics.PHYSICS_TOKEN_WIDTH``).
    """

    max_dist: int
    lap_pe_k: int
    node_dim: int
    num_edge_types: int
    geometry: bool = False
    physics: bool = False
