"""The shared trunk: VectorSet, attention, positional encodings, blocks, Backbone."""

from backbone.attention import MultiHeadSelfAttention, local_attention
from backbone.backbone import Backbone
from backbone.baselines import BiLSTM, WindowMLP
from backbone.block import Block
from backbone.cross_attention import MultiHeadCrossAttention
from backbone.masked_softmax import lengths_to_mask, masked_softmax
from backbone.positional import Learned1D, Learned2D, NoPositional, Sinusoidal1D, Sinusoidal2D
from backbone.vectorset import VectorSet
from backbone.vocab import Vocabulary, tokenize

__all__ = [
    "Backbone", "BiLSTM", "Block", "Learned1D", "Learned2D", "MultiHeadCrossAttention",
    "MultiHeadSelfAttention", "NoPositional", "Sinusoidal1D", "Sinusoidal2D", "VectorSet",
    "Vocabulary", "WindowMLP", "lengths_to_mask", "local_attention", "masked_softmax", "tokenize",
]
