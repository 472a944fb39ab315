"""Encoder: the contract every encoder follows: a raw batch in, a VectorSet out, and the
hand-over hook through which it receives what it learns from the data (a vocabulary,
normalization statistics) once, at setup."""

from __future__ import annotations

from abc import ABC, abstractmethod

from torch import nn

from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet


class Encoder(nn.Module, ABC):
    """Turns one modality's batch into a VectorSet of width d_model.

    ``out_width``: the width D of the vectors it returns, where its arguments fix it (its
    ``d_model``); the task modules check it against the backbone and the head when they are
    built, naming the task. None: not declared, not checked.

    ``normalizes_per_set``: True when ``forward`` normalizes each set by statistics over all
    its vectors (speech's ``utterance`` normalization). A long input read in chunks then needs
    the whole input's statistics in the batch, which ``vecset predict`` asks for by this flag.

    Shapes:
        batch (a dict of the data module's collate) -> VectorSet x (B, N, D), mask (B, N)
    """

    out_width: int | None = None
    normalizes_per_set: bool = False

    @abstractmethod
    def forward(self, batch: dict) -> VectorSet:
        """The batch's vectors."""

    def receive(self, spec: DataSpec) -> str | None:
        """The hand-over: check the data and take what the encoder learns from its training
        split when ``spec.fit``; return what it took, for the run's log, or None. Default:
        nothing to receive."""
        return None
