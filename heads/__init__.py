"""Per-task heads reading the backbone's VectorSet, all following one contract (``Head``)."""

from vecset.heads.contract import Head
from vecset.heads.edit_metrics import PhoneErrorRate, WordErrorRate
from vecset.heads.kernel_regression import NadarayaWatsonHead, nadaraya_watson
from vecset.heads.labeling import LabelingHead
from vecset.heads.pretext import PretextHead
from vecset.heads.segment_decoder import SegmentDecoder
from vecset.heads.seq2seq.head import GRUAttentionDecoder, Seq2SeqHead, TransformerDecoder
from vecset.heads.sequence import SequenceHead

__all__ = [
    "Head", "NadarayaWatsonHead", "nadaraya_watson",
    "LabelingHead", "PretextHead", "SegmentDecoder", "SequenceHead",
    "GRUAttentionDecoder", "PhoneErrorRate", "Seq2SeqHead", "TransformerDecoder", "WordErrorRate",
]
