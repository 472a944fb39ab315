"""PredictionOutput: what every kind of ``vecset predict`` output does with the head's predictions."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path


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
