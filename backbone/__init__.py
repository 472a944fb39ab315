"""The shared trunk (attention, positional encodings, blocks, Backbone, baselines) and the
vocabulary; VectorSet and DataSpec (in ``vecset.contracts``) re-exported."""

from vecset.backbone.attention import MultiHeadSelfAttention, local_attention
from vecset.backbone.backbone import Backbone
from vecset.backbone.baselines import BiLSTM, GridResNet, WindowMLP
from vecset.backbone.block import Block
from vecset.backbone.masked_softmax import lengths_to_mask, masked_softmax
from vecset.backbone.positional import (
    Learned1D,
    Learned2D,
    NoPositional,
    Sinusoidal1D,
    Sinusoidal2D,
)
from vecset.backbone.vocab import Vocabulary, tokenize
from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet

__all__ = [
    "Backbone", "BiLSTM", "Block", "DataSpec", "GridResNet", "Learned1D", "Learned2D", "MultiHeadSelfAttention", "NoPositional", "Sinusoidal1D", "Sinusoidal2D", "VectorSet",
    "Vocabulary", "WindowMLP", "lengths_to_mask", "local_attention", "masked_softmax", "tokenize",
]
