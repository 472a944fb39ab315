"""VectorSet: the one contract between encoders, the backbone and heads.

Every encoder returns one, the backbone maps one to one of the same length (plus an
optional prepended CLS vector), every head reads one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor


@dataclass
class VectorSet:
    """A padded batch of vector sets.

    Attributes:
        x:    (B, N, D) float, padded values
        mask: (B, N) bool, True where a vector is real
        pos:  optional (B, N, P) positions/coordinates (informational; encoders add
              positional encodings to ``x`` themselves)
        bias: optional pairwise attention structure, either
              (B, N, N) bool  -- allowed pairs (graph attention: a node sees its neighbours), or
              (B, N, N) / (B, H, N, N) float -- an additive score bias (e.g. per distance)
        cls:  True when index 0 of every set is a prepended CLS vector
        window: optional truncated attention chosen by the encoder: vector i attends only to
              j with |i - j| <= window (overrides the backbone's own ``window``)
        padded: whether any set of the batch is shorter than N (``mask`` has a False entry),
              known where the batch is built (the collate functions set ``batch["padded"]``
              from the lengths, on the host) so the backbone picks its unmasked fast path
              without reading the mask back from the device; None: unknown (the backbone
              then reads the mask, a host-device sync on a GPU)
        grid: optional (rows, columns) of the image grid the vectors fill, in row-major order
              with none padded (image encoders set it; a grid-shaped model such as GridResNet
              then need not find the grid from ``pos`` on the device)
        edges: optional (B, T, N, N) float typed adjacency of a graph: ``edges[b, t, i, j]`` is 1
              where nodes i and j share an edge of type t (read by the backbone's message
              passing, ``Backbone(local_mp="gine")``)
    """

    x: Tensor
    mask: Tensor
    pos: Tensor | None = None
    bias: Tensor | None = None
    cls: bool = False
    window: int | None = None
    padded: bool | None = None
    grid: tuple[int, int] | None = None
    edges: Tensor | None = None

    def __post_init__(self) -> None:
        if self.x.dim() != 3:
            raise ValueError(f"VectorSet.x must be (B, N, D), got shape {tuple(self.x.shape)}")
        if not self.x.is_floating_point():
            raise ValueError(f"VectorSet.x must be a float tensor, got dtype {self.x.dtype}")
        B, N, _ = self.x.shape
        if self.mask.shape != (B, N):
            raise ValueError(
                f"VectorSet.mask must be (B, N) = {(B, N)} to match x {tuple(self.x.shape)}, "
                f"got {tuple(self.mask.shape)}"
            )
        if self.mask.dtype != torch.bool:
            raise ValueError(f"VectorSet.mask must be bool, got dtype {self.mask.dtype}")
        if self.window is not None and self.window < 1:
            raise ValueError(f"VectorSet.window must be >= 1 (vector i sees j with |i - j| <= window) or None, "
                             f"got {self.window}")
        if self.grid is not None and self.grid[0] * self.grid[1] != N:
            raise ValueError(f"VectorSet.grid {tuple(self.grid)} must hold the N = {N} vectors (rows x columns)")
        if self.pos is not None and self.pos.shape[:2] != (B, N):
            raise ValueError(
                f"VectorSet.pos must start with (B, N) = {(B, N)}, got {tuple(self.pos.shape)}"
            )
        if self.bias is not None:
            b = self.bias
            if b.dtype == torch.bool:
                if b.shape != (B, N, N):
                    raise ValueError(
                        f"VectorSet.bias (bool allowed-pairs) must be (B, N, N) = {(B, N, N)}, "
                        f"got {tuple(b.shape)}"
                    )
            elif b.is_floating_point():
                # the rank first: comparing a (B, H, N, N) shape with (B, N, N) element by element
                # would make torch.export guard on H != N
                if not ((b.dim() == 3 and b.shape == (B, N, N))
                        or (b.dim() == 4 and b.shape[0] == B and b.shape[2:] == (N, N))):
                    raise ValueError(
                        f"VectorSet.bias (float) must be (B, N, N) = {(B, N, N)} or (B, H, N, N), "
                        f"got {tuple(b.shape)}"
                    )
            else:
                raise ValueError(f"VectorSet.bias must be bool or float, got dtype {b.dtype}")

        if self.edges is not None and not (self.edges.dim() == 4 and self.edges.shape[0] == B
                                           and self.edges.shape[2:] == (N, N) and self.edges.is_floating_point()):
            raise ValueError(f"VectorSet.edges must be a float (B, T, N, N) with (B, N) = {(B, N)}, got "
                             f"{tuple(self.edges.shape)} {self.edges.dtype}")

    @property
    def lengths(self) -> Tensor:
        """(B,) number of real vectors per set."""
        return self.mask.sum(dim=1)

    def with_x(self, x: Tensor) -> VectorSet:
        """The same structure with new values (same B, N)."""
        return replace(self, x=x)

    @classmethod
    def from_list(cls, vectors: list[Tensor]) -> VectorSet:
        """Pad a list of (n_i, D) tensors into one VectorSet. An empty set is an error."""
        if not vectors:
            raise ValueError("VectorSet.from_list needs at least one set")
        for i, v in enumerate(vectors):
            if v.dim() != 2 or v.shape[0] == 0:
                raise ValueError(f"set {i} must be a non-empty (n, D) tensor, got shape {tuple(v.shape)}")
        n = max(v.shape[0] for v in vectors)
        D = vectors[0].shape[1]
        x = vectors[0].new_zeros(len(vectors), n, D)
        mask = torch.zeros(len(vectors), n, dtype=torch.bool, device=x.device)
        for i, v in enumerate(vectors):
            x[i, : v.shape[0]] = v
            mask[i, : v.shape[0]] = True
        return cls(x=x, mask=mask, padded=any(v.shape[0] < n for v in vectors))
