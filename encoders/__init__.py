"""Encoders: one file per modality, each returning a VectorSet."""

from encoders.vector import VectorEncoder

__all__ = ["VectorEncoder"]
from encoders.graph import GraphEncoder, NodeFeaturizer, smiles_to_graph  # noqa: E402

__all__ += ["GraphEncoder", "NodeFeaturizer", "smiles_to_graph"]

from encoders.points import PointEncoder  # noqa: E402
from encoders.text import TextEncoder  # noqa: E402

__all__ += ["PointEncoder", "TextEncoder"]
