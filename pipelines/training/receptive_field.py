"""A model's receptive field: how many vectors on each side one output vector depends on.

Chunked inference over a long sequence (``vecset predict`` on hours of audio) is exact when
each chunk carries at least this many vectors of context on each side: encoder, backbone and
head each say theirs (a ``receptive_field`` attribute; the backbone's is a method of the
window the encoder sets), and the sum is the model's. They declare it (``ReceptiveField``,
``WindowedReceptiveField`` in ``contracts/abilities.py``); a part that does not (full attention,
an LSTM, a pooling head) depends on every vector: None.
"""

from __future__ import annotations

from torch import nn

from vecset.contracts.abilities import ReceptiveField, SetsWindow, WindowedReceptiveField


def receptive_field(encoder: nn.Module, backbone: nn.Module, head: nn.Module) -> int | None:
    """Vectors on each side one output vector depends on; None when unbounded."""
    if not (isinstance(encoder, ReceptiveField) and isinstance(backbone, WindowedReceptiveField)
            and isinstance(head, ReceptiveField)):
        return None
    bb = backbone.receptive_field(encoder.window if isinstance(encoder, SetsWindow) else None)
    return None if bb is None else encoder.receptive_field + bb + head.receptive_field
