"""Export mode: the model traced by ``torch.export`` / ONNX takes the paths that hold for every
input of the traced graph, not only for the example it was traced with.

``torch.jit.trace`` of the backbone bakes in the padding check of the traced input: SDPA's
unmasked fast path is chosen when a batch has no padding (``Backbone.forward``'s ``padded``), so
a trace made on an unpadded batch is wrong on a padded one. ``torch.export`` refuses such a
data-dependent branch instead. Inside ``exporting()`` the backbone takes the masked path always
(the same values on an unpadded batch), and windowed attention its dense banded mask rather than
the blocked path, which is chosen by the set size (``N > 4 x window``) and would bake that in.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_EXPORTING = False


class NotExportable(ValueError):
    """A model, or a part of it, that an exported graph cannot hold (the message says why and
    what to do instead)."""


def is_exporting() -> bool:
    """Whether a model is being traced for export (inside ``exporting()``)."""
    return _EXPORTING


@contextmanager
def exporting() -> Iterator[None]:
    """Trace for export inside this context: no data-dependent or size-dependent path choice."""
    global _EXPORTING
    before, _EXPORTING = _EXPORTING, True
    try:
        yield
    finally:
        _EXPORTING = before
