"""vecset: every input becomes a set of vectors for one shared self-attention backbone.

The public API, one import away::

    import vecset
    model = vecset.TaskModule(vecset.VectorEncoder(2, 32), vecset.Backbone(32, depth=2), vecset.LabelingHead(32, 2))

The layers sit in their own sub-packages, imported in one direction
(``pipelines -> heads, encoders -> backbone -> contracts -> torch``):

- ``vecset.contracts``: VectorSet, DataSpec and the abilities a model part declares, which every
  package reads;
- ``vecset.backbone``: attention, positional encodings, blocks, Backbone, baselines;
- ``vecset.encoders``: the Encoder contract, one package per modality, raw input -> VectorSet;
- ``vecset.heads``: the Head contract; labeling (N->N), sequence (N->1), seq2seq (N->N'),
  kernel regression;
- ``vecset.pipelines``: Lightning: data modules, training, reports, the ``vecset`` CLI.

In a source checkout those folders sit at the top level (the project's layout); pyproject.toml
maps each into this package (``package-dir``): a wheel holds them as ``vecset/backbone/...``,
an editable install maps the names onto the checkout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vecset.lazy import lazy_names

# A source checkout imported without an install of it (PYTHONPATH, or the working directory,
# ahead of another checkout's editable install): the sub-packages are the folders beside this
# one, which the package then searches too, so that ``vecset.backbone`` is this checkout's
# backbone/ and never another install's. An installed vecset has them inside (no pyproject.toml
# beside it) and this adds nothing.
_CHECKOUT = Path(__file__).resolve().parent.parent
if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "pipelines" / "__init__.py").is_file():
    __path__.append(str(_CHECKOUT))

if TYPE_CHECKING:  # for type checkers and editors; at run time ``__getattr__`` below
    from vecset.backbone import Backbone
    from vecset.contracts import DataSpec, VectorSet
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
    from vecset.pipelines import MultiTaskModule, TaskModule, pretrained

# name -> the sub-package that defines it; imported on first use (PEP 562), so that ``import
# vecset`` imports no torch: the ``vecset`` command (vecset/command.py) sets OpenMP's settings
# before torch loads
_SOURCES = {
    "Backbone": "backbone", "DataSpec": "contracts", "VectorSet": "contracts",
    "Encoder": "encoders", "GraphEncoder": "encoders", "PatchEncoder": "encoders", "PixelEncoder": "encoders",
    "SpeechEncoder": "encoders", "TextEncoder": "encoders", "VectorEncoder": "encoders",
    "Head": "heads", "LabelingHead": "heads", "NadarayaWatsonHead": "heads", "Seq2SeqHead": "heads",
    "SequenceHead": "heads",
    "MultiTaskModule": "pipelines", "TaskModule": "pipelines",
    "pretrained": "pipelines",  # vecset.pretrained("solubility"): a shipped predictor (pipelines/pretrained.py)
}
_SUBPACKAGES = ("contracts", "backbone", "encoders", "heads", "pipelines")

__all__ = [
    "Backbone", "DataSpec", "Encoder", "GraphEncoder", "Head", "LabelingHead", "MultiTaskModule", "NadarayaWatsonHead", "PatchEncoder",
    "PixelEncoder", "Seq2SeqHead", "SequenceHead", "SpeechEncoder", "TaskModule", "TextEncoder", "VectorEncoder",
    "VectorSet", "pretrained",
]


__getattr__, __dir__ = lazy_names(__name__, _SOURCES, _SUBPACKAGES)
