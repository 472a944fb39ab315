"""vecset: every input becomes a set of vectors for one shared self-attention backbone.

The public API, one import away::

    import vecset
    model = vecset.TaskModule(vecset.VectorEncoder(2, 32), vecset.Backbone(32, depth=2), vecset.LabelingHead(32, 2))

The four layers sit in their own sub-packages, imported in one direction
(``pipelines -> heads, encoders -> backbone -> torch``):

- ``vecset.backbone``: VectorSet and DataSpec (the contracts), attention, positional encodings,
  blocks, Backbone, baselines;
- ``vecset.encoders``: the Encoder contract, one package per modality, raw input -> VectorSet;
- ``vecset.heads``: the Head contract; labeling (N->N), sequence (N->1), seq2seq (N->N'),
  kernel regression;
- ``vecset.pipelines``: Lightning: data modules, training, reports, the ``vecset`` CLI.

In a source checkout those four folders sit at the top level (the project's layout); the
install maps them under ``vecset`` (``[tool.setuptools] package-dir`` in pyproject.toml).
"""

from vecset.backbone import Backbone, DataSpec, VectorSet
from vecset.encoders import (
    Encoder,
    GraphEncoder,
    PatchEncoder,
    PixelEncoder,
    SpeechEncoder,
    TextEncoder,
    VectorEncoder,
)
from vecset.heads import Head, LabelingHead, NadarayaWatsonHead, Seq2SeqHead, SequenceHead
from vecset.pipelines import MultiTaskModule, TaskModule

__all__ = [
    "Backbone", "DataSpec", "Encoder", "GraphEncoder", "Head", "LabelingHead", "MultiTaskModule", "NadarayaWatsonHead", "PatchEncoder",
    "PixelEncoder", "Seq2SeqHead", "SequenceHead", "SpeechEncoder", "TaskModule", "TextEncoder", "VectorEncoder",
    "VectorSet",
]
