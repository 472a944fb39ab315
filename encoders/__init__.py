"""Encoders: the Encoder contract, and one file (or package) per modality, each returning a VectorSet."""

from vecset.encoders.contract import Encoder
from vecset.encoders.graph import GraphEncoder, NodeFeaturizer, smiles_to_graph  # noqa: E402
from vecset.encoders.image import ConvTokenizer, PatchEncoder, PixelEncoder
from vecset.encoders.points import PointEncoder  # noqa: E402
from vecset.encoders.speech import Featurizer, SpeechEncoder
from vecset.encoders.text import TextEncoder  # noqa: E402
from vecset.encoders.vector import VectorEncoder

__all__ = [
    "ConvTokenizer", "Encoder", "Featurizer", "GraphEncoder", "NodeFeaturizer", "PatchEncoder", "PixelEncoder", "PointEncoder",
    "SpeechEncoder", "TextEncoder", "VectorEncoder", "smiles_to_graph",
]
