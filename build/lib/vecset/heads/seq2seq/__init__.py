"""Sequence-to-sequence (N -> N'): cross-attention, decoders, the head with greedy and beam decoding."""

from vecset.heads.seq2seq.cross_attention import MultiHeadCrossAttention
from vecset.heads.seq2seq.head import GRUAttentionDecoder, Seq2SeqHead, TransformerDecoder

__all__ = ["GRUAttentionDecoder", "MultiHeadCrossAttention", "Seq2SeqHead", "TransformerDecoder"]
