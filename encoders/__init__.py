"""Encoders: the Encoder contract, and one file (or package) per modality, each returning a VectorSet.

Each name is imported on first use (PEP 562's module ``__getattr__``): a model that reads
molecules imports no speech or image code (a shipped predictor starts in seconds).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for type checkers and editors; at run time ``__getattr__`` below
    from vecset.encoders.contract import Encoder
    from vecset.encoders.graph import GraphEncoder, NodeFeaturizer, smiles_to_graph
    from vecset.encoders.image import ConvTokenizer, PatchEncoder, PixelEncoder
    from vecset.encoders.points import PointEncoder
    from vecset.encoders.speech import Featurizer, SpeechEncoder
    from vecset.encoders.text import TextEncoder
    from vecset.encoders.vector import VectorEncoder

# name -> the module (or sub-package) that defines it
_SOURCES = {
    "Encoder": "contract", "GraphEncoder": "graph", "NodeFeaturizer": "graph", "smiles_to_graph": "graph",
    "ConvTokenizer": "image", "PatchEncoder": "image", "PixelEncoder": "image", "PointEncoder": "points",
    "Featurizer": "speech", "SpeechEncoder": "speech", "TextEncoder": "text", "VectorEncoder": "vector",
}

__all__ = [
    "ConvTokenizer", "Encoder", "Featurizer", "GraphEncoder", "NodeFeaturizer", "PatchEncoder", "PixelEncoder",
    "PointEncoder", "SpeechEncoder", "TextEncoder", "VectorEncoder", "smiles_to_graph",
]


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module 'vecset.encoders' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"vecset.encoders.{_SOURCES[name]}"), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_SOURCES})
