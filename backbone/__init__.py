"""The shared trunk: VectorSet, attention, positional encodings, blocks, Backbone."""

from backbone.attention import MultiHeadSelfAttention, local_attention
from backbone.backbone import Backbone
from backbone.baselines import BiLSTM, WindowMLP
from backbone.block import Block
from backbone.positional import Learned1D, Learned2D, NoPositional, Sinusoidal1D, Sinusoidal2D
from backbone.vectorset import VectorSet

__all__ = [
    "Backbone", "Block", "Learned1D", "Learned2D", "MultiHeadSelfAttention", "NoPositional",
    "Sinusoidal1D", "Sinusoidal2D", "VectorSet", "local_attention", "BiLSTM", "WindowMLP",
]
