"""Positional encodings: none, sinusoidal 1-D (any length), learned 1-D (fixed maximum),
sinusoidal and learned 2-D for grids.

Vaswani et al. 2017 (sinusoidal); Dosovitskiy et al. 2021, ViT (learned and 2-D).
Each module returns the encoding to add, (N, D); which one a modality uses is its
encoder's business. A learned table never wraps or truncates: a longer input is an error.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def sinusoid(positions: Tensor, dim: int) -> Tensor:
    """(N,) positions -> (N, dim) sin/cos table (dim even)."""
    if dim % 2:
        raise ValueError(f"sinusoidal encoding needs an even width, got {dim}")
    freqs = torch.exp(torch.arange(0, dim, 2, device=positions.device, dtype=torch.float32)
                      * (-math.log(10000.0) / dim))
    angles = positions.float()[:, None] * freqs[None, :]  # (N, dim/2)
    pe = torch.zeros(positions.shape[0], dim, device=positions.device)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe


class NoPositional(nn.Module):
    """No positional information: the backbone stays permutation-equivariant."""

    def forward(self, n: int, device: torch.device | None = None, start: int = 0) -> Tensor | None:
        return None


class Sinusoidal1D(nn.Module):
    """Fixed sin/cos encoding; works for any length."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.d_model = d_model

    def forward(self, n: int, device: torch.device | None = None, start: int = 0) -> Tensor:
        """Positions ``start`` .. ``start + n - 1`` (a chunk of a longer sequence starts later)."""
        return sinusoid(torch.arange(start, start + n, device=device), self.d_model)  # (N, D)


class Learned1D(nn.Module):
    """A learned table of ``max_len`` positions. Longer inputs raise a ValueError."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        if max_len < 1:
            raise ValueError(f"max_len must be >= 1, got {max_len}")
        self.max_len = max_len
        self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)

    def forward(self, n: int, device: torch.device | None = None, start: int = 0) -> Tensor:
        """Positions ``start`` .. ``start + n - 1`` (a chunk of a longer sequence starts later)."""
        if start + n > self.max_len:
            raise ValueError(
                f"input has {start + n} positions but the learned positional table holds max_len="
                f"{self.max_len}; raise max_len in the config or use a sinusoidal encoding"
            )
        return self.table[start:start + n]


class Sinusoidal2D(nn.Module):
    """Half the width encodes the row, half the column (any grid size)."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        if d_model % 4:
            raise ValueError(f"2-D sinusoidal encoding needs d_model divisible by 4, got {d_model}")
        self.d_model = d_model

    def forward(self, h: int, w: int, device: torch.device | None = None) -> Tensor:
        half = self.d_model // 2
        rows = sinusoid(torch.arange(h, device=device), half)  # (H, D/2)
        cols = sinusoid(torch.arange(w, device=device), half)  # (W, D/2)
        grid = torch.cat([rows[:, None].expand(h, w, half), cols[None].expand(h, w, half)], dim=-1)
        return grid.reshape(h * w, self.d_model)  # (H*W, D), row-major


class Learned2D(nn.Module):
    """Learned row and column tables (summed); a grid larger than the tables is an error."""

    def __init__(self, d_model: int, max_h: int, max_w: int) -> None:
        super().__init__()
        if max_h < 1 or max_w < 1:
            raise ValueError(f"max_h and max_w must be >= 1, got {max_h} x {max_w}")
        self.max_h, self.max_w = max_h, max_w
        self.rows = nn.Parameter(torch.randn(max_h, d_model) * 0.02)
        self.cols = nn.Parameter(torch.randn(max_w, d_model) * 0.02)

    def forward(self, h: int, w: int, device: torch.device | None = None) -> Tensor:
        if h > self.max_h or w > self.max_w:
            raise ValueError(
                f"grid of {h}x{w} positions exceeds the learned 2-D table of "
                f"{self.max_h}x{self.max_w}; raise max_h/max_w in the config"
            )
        return (self.rows[:h, None] + self.cols[None, :w]).reshape(h * w, -1)
