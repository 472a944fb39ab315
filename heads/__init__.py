"""Per-task heads reading the backbone's VectorSet."""

from heads.labeling import LabelingHead
from heads.sequence import SequenceHead

__all__ = ["LabelingHead", "SequenceHead"]
