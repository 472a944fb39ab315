"""Encoders: the Encoder contract, and one file (or package) per modality, each returning a VectorSet.

Each name is imported on first use (PEP 562's module ``__getattr__``): a model that reads
molecules imports no speech or image code (a shipped predictor starts in seconds).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vecset.lazy import lazy_names

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


__getattr__, __dir__ = lazy_names(__name__, _SOURCES)
