"""Token- and sequence-level error rates for sequence outputs (torchmetrics Metrics).

Phone error rate (PER) = total Levenshtein distance / total reference length (Levenshtein
1966; the ASR/G2P convention, e.g. Yao & Zweig 2015 on CMUdict); word error rate (WER) in
G2P = fraction of words whose predicted pronunciation is not exactly a reference. With
several references per item (a word with several pronunciations) the closest one counts.
Edit distance: ``torchaudio.functional.edit_distance``.

Predictions may come as token lists, or as ``TokenIds`` (ids still on the device, with the
vocabulary that decodes them): those are kept on the device and decoded, with one host read,
when the metric is computed (a training step then reads nothing: on a GPU each read waits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torchaudio.functional import edit_distance
from torchmetrics import Metric

from vecset.backbone.vocab import Vocabulary


def _closest(pred: list[str], refs: list[list[str]]) -> tuple[int, int]:
    """(edits, reference length) against the reference with the fewest edits."""
    if not refs:
        raise ValueError("every prediction needs at least one reference")
    return min(((edit_distance(pred, r), len(r)) for r in refs), key=lambda e: (e[0], -e[1]))


def _as_refs(target: list) -> list[list[list[str]]]:
    """Accept one reference per item (list of tokens) or several (list of lists)."""
    return [t if t and isinstance(t[0], list) else [t] for t in target]


@dataclass(frozen=True)
class TokenIds:
    """Predicted token ids not yet read on the host, and the vocabulary that decodes them
    (``Vocabulary.decode``: up to the first ``<eos>``, specials dropped).

    Shapes: ids (B, T) integers, on any device."""

    ids: Tensor
    vocab: Vocabulary


class _EditMetric(Metric):
    """An edit-based error rate whose predictions may be ``TokenIds``: kept on the device at
    ``update`` and scored at ``compute`` (through ``sync``, which torchmetrics calls before
    ``compute`` and before reducing over DDP processes, so every process has scored its own
    first), with one host read for all of them."""

    full_state_update = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._pending: list[tuple[TokenIds, list]] = []  # (ids on the device, references on the host)

    def _score(self, preds: list[list[str]], refs: list[list[list[str]]]) -> None:
        raise NotImplementedError

    def update(self, preds: list[list[str]] | TokenIds, target: list) -> None:
        refs = _as_refs(target)
        n = preds.ids.shape[0] if isinstance(preds, TokenIds) else len(preds)
        if n != len(refs):
            raise ValueError(f"{n} predictions but {len(refs)} targets")
        if isinstance(preds, TokenIds):
            self._pending.append((TokenIds(preds.ids.detach().to(torch.int32), preds.vocab), refs))
        else:
            self._score(preds, refs)

    def _score_pending(self) -> None:
        """Decode and score the kept ids: padded to one width with ``<eos>`` (decode stops
        there), joined, read once."""
        if not self._pending:
            return
        width = max(t.ids.shape[1] for t, _ in self._pending)
        ids = torch.cat([F.pad(t.ids, (0, width - t.ids.shape[1]), value=t.vocab.eos) for t, _ in self._pending])
        rows = iter(ids.tolist())  # the one host read
        for t, refs in self._pending:
            self._score([t.vocab.decode(next(rows)) for _ in range(t.ids.shape[0])], refs)
        self._pending = []

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        # torchmetrics' forward resets the metric to score one batch, then merges its states
        # back: what is kept must be in the states by then
        self._score_pending()
        return super().forward(*args, **kwargs)

    def sync(self, *args: Any, **kwargs: Any) -> None:
        self._score_pending()
        super().sync(*args, **kwargs)

    def reset(self) -> None:
        super().reset()
        self._pending = []


class PhoneErrorRate(_EditMetric):
    """Sum of edit distances / sum of reference lengths.

    Shapes: update(preds: B token lists or TokenIds (B, T), target: B token lists or B lists
    of references).
    """

    higher_is_better = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("edits", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("ref_len", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def _score(self, preds: list[list[str]], refs: list[list[list[str]]]) -> None:
        edits = length = 0
        for p, r in zip(preds, refs, strict=True):
            e, n = _closest(p, r)
            edits, length = edits + e, length + n
        self.edits += edits
        self.ref_len += length

    def compute(self) -> torch.Tensor:
        return self.edits.float() / self.ref_len.clamp(min=1).float()


class WordErrorRate(_EditMetric):
    """Fraction of items whose prediction differs from every reference (any token wrong).

    Shapes: as PhoneErrorRate."""

    higher_is_better = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("wrong", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("total", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def _score(self, preds: list[list[str]], refs: list[list[list[str]]]) -> None:
        self.wrong += sum(int(all(p != x for x in r)) for p, r in zip(preds, refs, strict=True))
        self.total += len(preds)

    def compute(self) -> torch.Tensor:
        return self.wrong.float() / self.total.clamp(min=1).float()
