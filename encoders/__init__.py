"""Encoders: one file per modality, each returning a VectorSet."""

from encoders.vector import VectorEncoder

__all__ = ["VectorEncoder"]
