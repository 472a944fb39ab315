"""vecset: every input becomes a set of vectors for one shared self-attention backbone.

The public API, one import away::

    import vecset
    model = vecset.TaskModule(vecset.VectorEncoder(2, 32), vecset.Backbone(32, depth=2), vecset.LabelingHead(32, 2))

The four layers sit in their own sub-packages, imported in one direction
(``pipelines -> heads, encoders -> backbone -> torch``):

- ``vecset.backbone``: VectorSet, attention, positional encodings, blocks, Backbone, baselines;
- ``vecset.encoders``: one package per modality, raw input -> VectorSet;
- ``vecset.heads``: labeling (N->N), sequence (N->1), seq2seq (N->N'), kernel regression;
- ``vecset.pipelines``: Lightning: data modules, training, reports, the ``vecset`` CLI.

In a source checkout those four folders sit at the top level (the project's layout); the
install maps them under ``vecset`` (``[tool.setuptools] package-dir`` in pyproject.toml).
"""

from vecset.backbone import Backbone, VectorSet
from vecset.encoders import (
    GraphEncoder,
    PatchEncoder,
    PixelEncoder,
    SpeechEncoder,
    TextEncoder,
    VectorEncoder,
)
from vecset.heads import LabelingHead, NadarayaWatsonHead, Seq2SeqHead, SequenceHead
from vecset.pipelines import MultiTaskModule, TaskModule

__all__ = [
    "Backbone", "GraphEncoder", "LabelingHead", "MultiTaskModule", "NadarayaWatsonHead", "PatchEncoder",
    "PixelEncoder", "Seq2SeqHead", "SequenceHead", "SpeechEncoder", "TaskModule", "TextEncoder", "VectorEncoder",
    "VectorSet",
]
