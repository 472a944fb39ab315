"""A model's receptive field: how many vectors on each side one output vector depends on.

Chunked inference over a long sequence (``vecset predict`` on hours of audio) is exact when
each chunk carries at least this many vectors of context on each side: encoder, backbone and
head each say theirs (a ``receptive_field`` attribute; the backbone's is a method of the
window the encoder sets), and the sum is the model's. A part without one (full attention, an
LSTM, a pooling head) depends on every vector: None.
"""

from __future__ import annotations

from torch import nn


def receptive_field(encoder: nn.Module, backbone: nn.Module, head: nn.Module) -> int | None:
    """Vectors on each side one output vector depends on; None when unbounded."""
    enc = getattr(encoder, "receptive_field", None)
    bb = getattr(backbone, "receptive_field", None)
    hd = getattr(head, "receptive_field", None)
    if enc is None or bb is None or hd is None:
        return None
    bb = bb(getattr(encoder, "window", None))
    return None if bb is None else enc + bb + hd
