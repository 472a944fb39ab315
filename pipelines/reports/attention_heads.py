"""Which heads an attention picture draws, and the parts every attention picture shares: the
block's name in titles and a colour bar in attention-weight units.

``heads`` of an attention report: ``"mean"`` (one panel, the mean over the block's heads),
``"each"`` (one panel per head) or a list of head indices (a panel for each). A mean of
distributions over the keys is one too, so every panel's weights sum to 1 over the keys.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

Heads = str | list[int]

UNIT = "attention weight"


def check_heads(heads: Heads) -> Heads:
    """``heads`` as given, or a clear error (at the report's construction, not after a test pass)."""
    if isinstance(heads, str):
        if heads not in ("mean", "each"):
            raise ValueError(f"heads={heads!r}: use 'mean', 'each' or a list of head indices")
        return heads
    if not heads or not all(isinstance(h, int) for h in heads):
        raise ValueError(f"heads={heads!r}: use 'mean', 'each' or a non-empty list of head indices")
    return list(heads)


def pick_heads(w: Tensor, heads: Heads) -> tuple[Tensor, list[str]]:
    """(P, ...) panels from (H, ...) per-head weights and a label per panel (``"head mean"``,
    ``"head 2"``).

    Shapes:
        w (H, ...) -> (P, ...), P = 1 for "mean", H for "each", len(heads) for a list
    """
    H = w.shape[0]
    if heads == "mean":
        return w.mean(0, keepdim=True), [f"mean of {H} heads"]
    idx = list(range(H)) if heads == "each" else list(heads)
    bad = [h for h in idx if not -H <= h < H]
    if bad:
        raise ValueError(f"heads {bad} out of range: the block has {H} heads")
    return w[torch.tensor(idx, dtype=torch.long)], [f"head {h % H}" for h in idx]


def block_name(backbone, layer: int) -> str:
    """``"block 3 of 4"`` for ``layer`` 3 or -1 of a 4-block backbone (``AttentionWeights``)."""
    n = len(backbone.blocks)
    return f"block {layer % n} of {n}"


def heads_name(heads: Heads) -> str:
    return "head mean" if heads == "mean" else "each head" if heads == "each" else f"head{'s' if len(heads) > 1 else ''} {', '.join(map(str, heads))}"


def attention_colorbar(fig, mappable, ax: Sequence | object, label: str = UNIT):
    """A colour bar for the panels ``ax`` (one axes or several sharing one scale)."""
    return fig.colorbar(mappable, ax=ax, fraction=0.046, pad=0.02, label=label)


def shared_max(panels: Sequence[np.ndarray]) -> float:
    """The top of a colour scale shared by all panels (at least a tiny positive number)."""
    return max(1e-12, max(float(np.max(p)) for p in panels))
