"""Encoders: one file per modality, each returning a VectorSet."""

from encoders.graph import GraphEncoder, NodeFeaturizer, smiles_to_graph  # noqa: E402
from encoders.image import PatchEncoder, PixelEncoder
from encoders.points import PointEncoder  # noqa: E402
from encoders.speech import Featurizer, SpeechEncoder
from encoders.text import TextEncoder  # noqa: E402
from encoders.vector import VectorEncoder

__all__ = [
    "Featurizer", "GraphEncoder", "NodeFeaturizer", "PatchEncoder", "PixelEncoder", "PointEncoder",
    "SpeechEncoder", "TextEncoder", "VectorEncoder", "smiles_to_graph",
]
