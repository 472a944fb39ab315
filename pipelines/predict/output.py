"""PredictionOutput: what every kind of ``vecset predict`` output does with the head's
predictions; PredictModel: what the predict side knows of the model, for the output a data
module makes (``VecsetDataModule.prediction_output``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class PredictModel:
    """What the predicted task's model declares that a prediction output may need; the data
    module gets these values, never the model.

    Args:
        receptive_field: input vectors on each side one output vector depends on (the encoder's,
            backbone's and head's together); None when unbounded.
        normalizes_per_set: the encoder normalizes each set by its own statistics (a chunk of a
            long recording then needs the whole recording's).
        segment_decoder: the head's decoder from one set's per-vector outputs (N, C) to labels
            (N,); None when it has none.
    """

    receptive_field: int | None = None
    normalizes_per_set: bool = False
    segment_decoder: Callable[[Any], Any] | None = None


class PredictionOutput(ABC):
    """One run's predictions, turned into files under the run directory.

    ``add`` takes one batch: the sample ids, the head's ``predict`` output (lists, one entry
    per sample) and the batch itself (a chunk's ``keep`` and ``offsets``); ``close`` writes what
    is left and returns the path to print. ``streams``: every batch is written as it comes, so
    Lightning need keep no copy of the predictions (memory does not grow with the input).
    """

    streams: bool = False

    @abstractmethod
    def add(self, ids: list[int], preds: dict, batch: dict) -> None:
        """One batch's predictions."""

    @abstractmethod
    def close(self) -> Path:
        """Finish the files; the path of the main one."""
