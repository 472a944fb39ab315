"""Per-task heads reading the backbone's VectorSet."""

from heads.edit_metrics import PhoneErrorRate, WordErrorRate
from heads.kernel_regression import NadarayaWatsonHead, nadaraya_watson
from heads.labeling import LabelingHead
from heads.seq2seq import GRUAttentionDecoder, Seq2SeqHead, TransformerDecoder
from heads.sequence import SequenceHead

__all__ = [
    "NadarayaWatsonHead", "nadaraya_watson",
    "LabelingHead", "SequenceHead",
    "GRUAttentionDecoder", "PhoneErrorRate", "Seq2SeqHead", "TransformerDecoder", "WordErrorRate",
]
