"""Encoders: one file per modality, each returning a VectorSet."""

from encoders.vector import VectorEncoder
from encoders.speech import Featurizer, SpeechEncoder

__all__ = ["VectorEncoder", "Featurizer", "SpeechEncoder"]
