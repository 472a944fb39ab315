"""Per-task heads reading the backbone's VectorSet, all following one contract (``Head``).

Each name is imported on first use (PEP 562's module ``__getattr__``), and a head imports
torchmetrics when its ``metrics()`` is called (training), not to predict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vecset.lazy import lazy_names

if TYPE_CHECKING:  # for type checkers and editors; at run time ``__getattr__`` below
    from vecset.heads.contract import Head
    from vecset.heads.edit_metrics import PhoneErrorRate, WordErrorRate
    from vecset.heads.kernel_regression import NadarayaWatsonHead, nadaraya_watson
    from vecset.heads.labeling import LabelingHead
    from vecset.heads.pretext import PretextHead
    from vecset.heads.segment_decoder import SegmentDecoder
    from vecset.heads.seq2seq.decoders import GRUAttentionDecoder, TransformerDecoder
    from vecset.heads.seq2seq.head import Seq2SeqHead
    from vecset.heads.sequence import SequenceHead

# name -> the module that defines it
_SOURCES = {
    "Head": "contract", "PhoneErrorRate": "edit_metrics", "WordErrorRate": "edit_metrics",
    "NadarayaWatsonHead": "kernel_regression", "nadaraya_watson": "kernel_regression", "LabelingHead": "labeling",
    "PretextHead": "pretext", "SegmentDecoder": "segment_decoder", "GRUAttentionDecoder": "seq2seq.decoders",
    "Seq2SeqHead": "seq2seq.head", "TransformerDecoder": "seq2seq.decoders", "SequenceHead": "sequence",
}

__all__ = [
    "GRUAttentionDecoder", "Head", "LabelingHead", "NadarayaWatsonHead", "PhoneErrorRate", "PretextHead",
    "SegmentDecoder", "Seq2SeqHead", "SequenceHead", "TransformerDecoder", "WordErrorRate", "nadaraya_watson",
]


__getattr__, __dir__ = lazy_names(__name__, _SOURCES)
