"""Encoders: one file per modality, each returning a VectorSet."""

from encoders.speech import Featurizer, SpeechEncoder
from encoders.vector import VectorEncoder

__all__ = ["VectorEncoder", "Featurizer", "SpeechEncoder"]
