"""Sequence-to-sequence (N -> N'): cross-attention, decoders, the head with greedy and beam decoding."""

from vecset.heads.seq2seq.cross_attention import MultiHeadCrossAttention
from vecset.heads.seq2seq.decoders import GRUAttentionDecoder, TransformerDecoder
from vecset.heads.seq2seq.head import Seq2SeqHead

__all__ = ["GRUAttentionDecoder", "MultiHeadCrossAttention", "Seq2SeqHead", "TransformerDecoder"]
