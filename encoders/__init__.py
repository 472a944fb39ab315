"""Encoders: one file per modality, each returning a VectorSet."""

from encoders.image import PatchEncoder, PixelEncoder
from encoders.vector import VectorEncoder

__all__ = ["PatchEncoder", "PixelEncoder", "VectorEncoder"]
