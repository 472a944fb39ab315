"""Masked softmax with valid lengths (Zhang et al., "Dive into Deep Learning", sec. 11.3).

Keys past a sequence's valid length get exactly zero weight: their scores are set to
-inf before the softmax, so exp() gives an exact 0 (not a small number, as with the
-1e6 fill). A row with no valid key has nothing to attend to: it gets all-zero weights
instead of the NaN that softmax over all -inf would give.
"""

from __future__ import annotations

import torch
from torch import Tensor


def lengths_to_mask(valid_lens: Tensor, num_keys: int) -> Tensor:
    """(...,) lengths -> (..., K) bool, True for key positions < length."""
    return torch.arange(num_keys, device=valid_lens.device) < valid_lens[..., None]


def masked_softmax(scores: Tensor, valid_lens: Tensor | None) -> Tensor:
    """Softmax over the last axis, keeping only the first ``valid_lens`` keys.

    Shapes:
        scores:     (B, Q, K), or (B, H, Q, K) for several heads
        valid_lens: None (all keys valid), (B,) one length per sequence, or (B, Q) one
                    length per query (e.g. causal decoding)
        returns:    same shape as ``scores``; weights past the valid length are exactly 0
    """
    if valid_lens is None:
        return scores.softmax(-1)
    B, K = scores.shape[0], scores.shape[-1]
    Q = scores.shape[-2]
    if valid_lens.dim() == 1:
        if valid_lens.shape[0] != B:
            raise ValueError(f"valid_lens (B,) must have B={B} entries, got {tuple(valid_lens.shape)}")
        keep = lengths_to_mask(valid_lens, K)[:, None, :]  # (B, 1, K)
    elif valid_lens.dim() == 2:
        if valid_lens.shape != (B, Q):
            raise ValueError(f"valid_lens (B, Q) must be {(B, Q)}, got {tuple(valid_lens.shape)}")
        keep = lengths_to_mask(valid_lens, K)  # (B, Q, K)
    else:
        raise ValueError(f"valid_lens must be (B,) or (B, Q), got {tuple(valid_lens.shape)}")
    if scores.dim() == 4:
        keep = keep[:, None]  # broadcast over heads
    weights = scores.masked_fill(~keep, float("-inf")).softmax(-1)
    return torch.nan_to_num(weights, nan=0.0)  # rows with no valid key: all zeros
