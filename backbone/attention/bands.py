"""Truncated attention's geometry: the band |i - j| <= window, dense or cut into blocks.

The blocked form (``to_blocks``) puts each block of ``window`` queries beside the 3 x window
keys around it, so memory grows with N x window rather than N^2.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


def band_mask(n: int, window: int, device: torch.device | None = None) -> Tensor:
    """(N, N) bool, True where |i - j| <= window. N x N: callers check the memory first."""
    idx = torch.arange(n, device=device)
    # bool comparisons, not |i - j| in int64 (8 bytes a pair, twice)
    return (idx[None, :] >= idx[:, None] - window) & (idx[None, :] <= idx[:, None] + window)


def dense_to_band(weights: Tensor, window: int) -> Tensor:
    """(..., N, N) weights -> (..., N, 2 x window + 1) band: band[..., i, o] is the weight of
    key i + o - window (0 where that key is outside the sequence)."""
    N = weights.shape[-2]
    padded = F.pad(weights, (window, window))  # (..., N, N + 2W): key j in column j + W
    idx = torch.arange(N, device=weights.device)[:, None] + torch.arange(2 * window + 1, device=weights.device)
    return padded.gather(-1, idx.expand(*weights.shape[:-1], 2 * window + 1))


def band_to_dense(band: Tensor, window: int, n_keys: int) -> Tensor:
    """(..., Nq, 2 x window + 1) band of queries 0..Nq-1 -> (..., Nq, n_keys) weights, zero
    outside the band (Nq <= n_keys; memory Nq x n_keys: pass a few queries of a long input)."""
    Nq, width = band.shape[-2:]
    idx = torch.arange(Nq, device=band.device)[:, None] + torch.arange(width, device=band.device)  # key + W
    out = band.new_zeros(*band.shape[:-1], n_keys + 2 * window)
    out.scatter_(-1, idx.expand(band.shape), band)
    return out[..., window:window + n_keys]


def key_windows(t: Tensor, W: int, nb: int) -> Tensor:
    """(B, H, N, X) -> (B*nb, H, 3W, X): block b's keys b*W - W .. b*W + 2W - 1 (zeros outside)."""
    B, H, N, X = t.shape
    t = F.pad(t, (0, 0, W, W + nb * W - N))  # (B, H, (nb+2)W, X)
    t = t.unfold(2, 3 * W, W).permute(0, 2, 1, 4, 3)  # (B, nb, H, 3W, X)
    return t.reshape(B * nb, H, 3 * W, X)


def to_blocks(q: Tensor, k: Tensor, v: Tensor, key_mask: Tensor,
              window: int) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Cut the sequence into blocks of ``window`` queries, each with the 3 x window keys around it.

    Blocks go into the batch dimension and heads stay in theirs, so one mask per block
    broadcasts over the heads. Every query keeps its own position, so no row is fully masked
    (fused kernels give NaN there).

    Shapes (W = window, nb = ceil(N / W)):
        q, k, v: (B, H, N, Dh), key_mask: (B, N) bool, True for real keys
        returns: qb (B*nb, H, W, Dh); kb, vb (B*nb, H, 3W, Dh); allowed (B*nb, 1, W, 3W) bool
            (|i - j| <= window and a real key); offsets (W, 3W) long, key minus query
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    B, H, N, Dh = q.shape
    W = window
    nb = math.ceil(N / W)
    qb = F.pad(q, (0, 0, 0, nb * W - N)).reshape(B, H, nb, W, Dh).transpose(1, 2).reshape(B * nb, H, W, Dh)
    kb, vb = key_windows(k, W, nb), key_windows(v, W, nb)
    km = key_windows(key_mask[:, None, :, None], W, nb)[:, 0, :, 0]  # (B*nb, 3W)
    i = torch.arange(W, device=q.device)
    j = torch.arange(3 * W, device=q.device)
    offsets = (j[None, :] - W) - i[:, None]  # (W, 3W)
    allowed = (offsets.abs() <= window) & km[:, None, :]  # (B*nb, W, 3W)
    allowed = allowed | (offsets == 0)
    return qb, kb, vb, allowed[:, None], offsets


def from_blocks(t: Tensor, B: int, N: int) -> Tensor:
    """(B*nb, H, W, X) per-block query rows -> (B, H, N, X)."""
    _, H, W, X = t.shape
    nb = t.shape[0] // B
    return t.reshape(B, nb, H, W, X).transpose(1, 2).reshape(B, H, nb * W, X)[:, :, :N]


def blocks_to_band(weights: Tensor, B: int, N: int) -> Tensor:
    """(B*nb, H, W, 3W) block weights -> (B, H, N, 2W + 1) band (as ``dense_to_band``)."""
    W = weights.shape[-2]
    # query i of a block sits at key column i + W: its band is columns i .. i + 2W
    idx = torch.arange(W, device=weights.device)[:, None] + torch.arange(2 * W + 1, device=weights.device)
    return from_blocks(weights.gather(-1, idx.expand(*weights.shape[:2], W, 2 * W + 1)), B, N)
