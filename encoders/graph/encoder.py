"""GraphEncoder: node vectors plus the structure as an attention bias (neighbours only, or all pairs with a distance and bond-type bias, Graphormer)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet
from vecset.encoders.contract import Encoder
from vecset.encoders.graph.physics import PHYSICS_TOKEN_WIDTH
from vecset.encoders.graph.structure import GraphStructure

GraphAttention = Literal["neighbours", "all_pairs", "none"]
Geometry = Literal["none", "distance_gaussian"]


class GaussianDistanceBias(nn.Module):
    """3-D distances -> one attention bias per head (Uni-Mol, Zhou et al. 2023): K Gaussians of
    the distance, centres evenly from 0 to ``cutoff`` Angstrom and as wide as their spacing,
    then Linear(K, K), GELU, Linear(K, H). The last layer starts at zero, so a model starts
    from its 2-D structure and learns how much geometry matters. A pair without a distance
    (``dist3d`` < 0: no conformer, another fragment, padding) gets no bias.

    Shapes: dist3d (B, N, N) float -> (B, H, N, N)
    """

    def __init__(self, heads: int, gaussians: int = 16, cutoff: float = 10.0) -> None:
        super().__init__()
        if gaussians < 1 or cutoff <= 0:
            raise ValueError(f"geometry_gaussians must be >= 1 and geometry_cutoff > 0, got {gaussians} and {cutoff}")
        self.register_buffer("centers", torch.linspace(0.0, cutoff, gaussians), persistent=False)
        self.width = cutoff / max(gaussians - 1, 1)
        self.mlp = nn.Sequential(nn.Linear(gaussians, gaussians), nn.GELU(), nn.Linear(gaussians, heads))
        nn.init.zeros_(self.mlp[-1].weight)
        nn.init.zeros_(self.mlp[-1].bias)

    def forward(self, dist3d: Tensor) -> Tensor:
        have = (dist3d >= 0).to(dist3d.dtype)[..., None]  # (B, N, N, 1)
        basis = torch.exp(-0.5 * ((dist3d[..., None] - self.centers) / self.width) ** 2)  # (B, N, N, K)
        return (self.mlp(basis) * have).permute(0, 3, 1, 2)


class GraphEncoder(Encoder):
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
        geometry: ``distance_gaussian`` adds a per-head bias from the 3-D distances of one
            conformer per molecule (``GaussianDistanceBias``; the data module's ``geometry:
            true`` computes them) to the ``all_pairs`` (or ``none``) bias; ``none`` (default):
            the 2-D graph only.
        geometry_gaussians, geometry_cutoff: K Gaussians with centres from 0 to the cutoff (Angstrom).
        physics_token: one more vector first in the set, a linear map of the molecule's physics
            descriptors (``batch["physics"]``: the data module's ``features.physics: true``; the
            generalized-Born energy, surface, logP, TPSA, H-bond counts, rotatable bonds): every
            atom attends to it and it to every atom, with no structure bias (0) and no bonds.
            For whole-molecule heads (a property per molecule), not per-atom labels.

    The VectorSet also carries the bonds as ``edges``, (B, T, N, N) with T = ``num_edge_types``:
    channel t is 1 where two atoms share a bond of type t (channel 0, "no edge", stays zero); the
    backbone's message passing (``Backbone(local_mp="gine")``) reads it.

    ``max_dist``, ``lap_pe_k``, ``node_dim`` and ``num_edge_types`` size the encoder's tables;
    the data decides the tensors. At the hand-over (``receive``) a data module that describes its
    graphs (``DataSpec.structure``) has them checked (``max_dist`` and ``num_edge_types`` only with
    ``all_pairs``, which has those tables), and that the data has 3-D distances when
    ``geometry`` wants them: a mismatch is one error naming both values, before any step (a
    distance table of another ``max_dist`` reads the data's "unreachable" as a distance, silently).

    Shapes:
        batch["x"] (B, N, F), batch["mask"] (B, N), batch["dist"]/["edge"] (B, N, N) long,
        batch["degree"] (B, N) long, batch["lap"] (B, N, k), batch["dist3d"] (B, N, N) float
        -> VectorSet x (B, N, D), bias (B, N, N) bool or (B, H, N, N) float, edges (B, T, N, N) float;
        with ``physics_token``, batch["physics"] (B, P) and N + 1 vectors, the token first.
    """

    def __init__(self, d_model: int, node_dim: int = 42, attention: GraphAttention = "all_pairs",
                 heads: int = 4, max_dist: int = 8, num_edge_types: int = 6, max_degree: int = 6,
                 lap_pe_k: int = 0, lap_sign_flip: bool = True, geometry: Geometry = "none",
                 geometry_gaussians: int = 16, geometry_cutoff: float = 10.0, physics_token: bool = False) -> None:
        super().__init__()
        self.lap_sign_flip = lap_sign_flip
        if attention not in ("neighbours", "all_pairs", "none"):
            raise ValueError(f"attention must be 'neighbours', 'all_pairs' or 'none', got {attention!r}")
        if geometry not in ("none", "distance_gaussian"):
            raise ValueError(f"geometry must be 'none' or 'distance_gaussian', got {geometry!r}")
        if geometry != "none" and attention == "neighbours":
            raise ValueError("geometry='distance_gaussian' adds a float bias, which attention='neighbours' (allowed "
                             "pairs, bool) cannot carry; use attention 'all_pairs' or 'none' with it")
        self.geometry = geometry
        self.distance_bias = GaussianDistanceBias(heads, geometry_gaussians, geometry_cutoff) \
            if geometry != "none" else None
        if heads < 1:
            raise ValueError(f"heads must be >= 1 (the backbone's attention heads), got {heads}")
        self.node_dim, self.attention, self.heads = node_dim, attention, heads
        self.max_dist, self.max_degree, self.lap_pe_k = max_dist, max_degree, lap_pe_k
        self.num_edge_types = num_edge_types
        self.out_width = d_model
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
        self.physics_proj = nn.Linear(PHYSICS_TOKEN_WIDTH, d_model) if physics_token else None

    def receive(self, spec: DataSpec) -> str | None:
        """Check that the data's graph tensors fit this encoder's tables (at every stage)."""
        data = spec.structure
        if not isinstance(data, GraphStructure):  # data that does not describe its graphs: the forward checks what it can
            return None
        mine = {"node_dim": self.node_dim, "lap_pe_k": self.lap_pe_k}
        if self.attention == "all_pairs":  # the distance and bond-type tables exist only there
            mine |= {"max_dist": self.max_dist, "num_edge_types": self.num_edge_types}
        have = asdict(data)
        bad = [f"{k}={v} but {spec.source} made the graphs with {k}={have[k]}" for k, v in mine.items() if v != have[k]]
        if self.geometry != "none" and not data.geometry:
            bad.append(f"geometry={self.geometry!r} but {spec.source} made the graphs without 3-D distances "
                       "(set its geometry: true)")
        if self.physics_proj is not None and not data.physics:
            bad.append(f"physics_token=True but {spec.source} made the graphs without physics descriptors "
                       "(set its features.physics: true)")
        if bad:
            raise ValueError(f"{spec.where}GraphEncoder has {'; '.join(bad)}; give the encoder the data's values "
                             "(max_dist and lap_pe_k are arguments of both the data module and the encoder)")
        return None

    def structure_bias(self, batch: dict) -> Tensor | None:
        dist, mask = batch["dist"], batch["mask"]
        if self.attention == "neighbours":
            pair = mask[:, :, None] & mask[:, None, :]
            return (dist == 1) & pair  # (B, N, N); the attention adds the diagonal itself
        bias = None
        if self.attention == "all_pairs":
            d = dist.clamp(max=self.max_dist + 1)
            bias = (self.dist_bias(d) + self.edge_bias(batch["edge"])).permute(0, 3, 1, 2)  # (B, H, N, N)
        if self.distance_bias is not None:
            if "dist3d" not in batch:
                raise ValueError("GraphEncoder(geometry='distance_gaussian') needs 3-D distances (batch['dist3d']); "
                                 "set the data module's geometry: true")
            geo = self.distance_bias(batch["dist3d"])
            bias = geo if bias is None else bias + geo
        return bias

    def bonds(self, edge: Tensor) -> Tensor:
        """Bond types (B, N, N) long -> typed adjacency (B, T, N, N) float (channel 0, no bond, all zero)."""
        onehot = F.one_hot(edge.clamp(0, self.num_edge_types - 1), self.num_edge_types)  # (B, N, N, T)
        onehot[..., 0] = 0
        return onehot.permute(0, 3, 1, 2).float()

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
        bias, edges = self.structure_bias(batch), self.bonds(batch["edge"])
        if self.physics_proj is not None:
            h, mask, bias, edges = self.with_physics_token(batch, h, mask, bias, edges)
        return VectorSet(x=h, mask=mask, bias=bias, padded=batch.get("padded"), edges=edges)

    def with_physics_token(self, batch: dict, h: Tensor, mask: Tensor, bias: Tensor | None,
                           edges: Tensor) -> tuple[Tensor, Tensor, Tensor | None, Tensor]:
        """The set with the physics token first: (B, N, D) -> (B, N + 1, D), the mask, the bias
        (bool: the token and every atom see each other; float: 0 to and from it) and the bonds
        (none to it) padded alike."""
        if "physics" not in batch:
            raise ValueError("GraphEncoder(physics_token=True) needs the molecules' physics descriptors "
                             "(batch['physics']); set the data module's features.physics: true")
        physics = batch["physics"]
        if physics.shape[-1] != PHYSICS_TOKEN_WIDTH:
            raise ValueError(f"GraphEncoder(physics_token=True) expects {PHYSICS_TOKEN_WIDTH} physics values per "
                             f"molecule, got {physics.shape[-1]}")
        token = self.physics_proj(physics.to(h.dtype))[:, None, :]  # (B, 1, D)
        h = torch.cat([token, h], dim=1)
        mask = F.pad(mask, (1, 0), value=True)
        if bias is not None and bias.dtype == torch.bool:  # allowed pairs: none to or from padding
            bias = F.pad(bias, (1, 0, 1, 0), value=True) & mask[:, :, None] & mask[:, None, :]
        elif bias is not None:
            bias = F.pad(bias, (1, 0, 1, 0), value=0.0)
        return h, mask, bias, F.pad(edges, (1, 0, 1, 0))
