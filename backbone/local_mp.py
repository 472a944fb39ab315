"""Local message passing beside self-attention, as in a GPS layer (Rampasek et al. 2022, "Recipe
for a General, Powerful, Scalable Graph Transformer"): each block adds a GINE convolution over
the graph's edges (Hu et al. 2020, "Strategies for Pre-training Graph Neural Networks") to its
attention output, with its own pre-norm (``Block``).

The edges are categorical (a molecule's bond types), so ``W e_ij`` of a one-hot ``e_ij`` is one
learned vector per type, and the sum over neighbours splits by type into T dense products of
the typed adjacency with ReLU(h + w_t): no edge list, no data-dependent shapes, no host sync.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class GINEConv(nn.Module):
    """m_i = h_i + sum_j ReLU(h_j + W e_ij), then out_i = MLP(m_i) (Linear, ReLU, Linear), with
    e_ij the one-hot type of the edge between i and j; nodes without an edge between them send
    nothing, and padded nodes have no edges, so they never reach a real node. Padded rows of
    the output are zero.

    Args:
        d_model: node width D.
        bond_types: edge types T (the typed adjacency's channels; ``GraphEncoder``'s
            ``num_edge_types``, 6 for molecules).

    Shapes: h (B, N, D), edges (B, T, N, N) float, mask (B, N) bool -> (B, N, D)
    """

    def __init__(self, d_model: int, bond_types: int) -> None:
        super().__init__()
        if bond_types < 1:
            raise ValueError(f"bond_types must be >= 1 (the edge types of the graphs), got {bond_types}")
        self.bond_types = bond_types
        self.edge_proj = nn.Linear(bond_types, d_model, bias=False)  # W; column t = W e for type t
        self.mlp = nn.Sequential(nn.Linear(d_model, d_model), nn.ReLU(), nn.Linear(d_model, d_model))

    def messages(self, h: Tensor, edges: Tensor, mask: Tensor) -> Tensor:
        """sum_j ReLU(h_j + W e_ij) over the real nodes j (a padded node sends nothing, whatever
        ``edges`` says). Shapes: (B, N, D), (B, T, N, N), (B, N) -> (B, N, D)"""
        w = self.edge_proj.weight.T.to(h.dtype)  # (T, D)
        per_type = torch.relu(h[:, None] + w[None, :, None, :])  # (B, T, N, D): ReLU(h_j + w_t)
        per_type = per_type * mask[:, None, :, None].to(h.dtype)
        return torch.einsum("btij,btjd->bid", edges.to(h.dtype), per_type)

    def forward(self, h: Tensor, edges: Tensor, mask: Tensor) -> Tensor:
        return self.mlp(h + self.messages(h, edges, mask)) * mask[..., None].to(h.dtype)
