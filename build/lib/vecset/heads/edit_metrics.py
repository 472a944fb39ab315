"""Token- and sequence-level error rates for sequence outputs (torchmetrics Metrics).

Phone error rate (PER) = total Levenshtein distance / total reference length (Levenshtein
1966; the ASR/G2P convention, e.g. Yao & Zweig 2015 on CMUdict); word error rate (WER) in
G2P = fraction of words whose predicted pronunciation is not exactly a reference. With
several references per item (a word with several pronunciations) the closest one counts.
Edit distance: ``torchaudio.functional.edit_distance``.
"""

from __future__ import annotations

import torch
from torchaudio.functional import edit_distance
from torchmetrics import Metric


def _closest(pred: list[str], refs: list[list[str]]) -> tuple[int, int]:
    """(edits, reference length) against the reference with the fewest edits."""
    if not refs:
        raise ValueError("every prediction needs at least one reference")
    return min(((edit_distance(pred, r), len(r)) for r in refs), key=lambda e: (e[0], -e[1]))


def _as_refs(target: list) -> list[list[list[str]]]:
    """Accept one reference per item (list of tokens) or several (list of lists)."""
    return [t if t and isinstance(t[0], list) else [t] for t in target]


class PhoneErrorRate(Metric):
    """Sum of edit distances / sum of reference lengths.

    Shapes: update(preds: B token lists, target: B token lists or B lists of references).
    """

    higher_is_better = False
    full_state_update = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("edits", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("ref_len", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: list[list[str]], target: list) -> None:
        refs = _as_refs(target)
        if len(preds) != len(refs):
            raise ValueError(f"{len(preds)} predictions but {len(refs)} targets")
        for p, r in zip(preds, refs, strict=True):
            e, n = _closest(p, r)
            self.edits += e
            self.ref_len += n

    def compute(self) -> torch.Tensor:
        return self.edits.float() / self.ref_len.clamp(min=1).float()


class WordErrorRate(Metric):
    """Fraction of items whose prediction differs from every reference (any token wrong)."""

    higher_is_better = False
    full_state_update = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("wrong", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("total", torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: list[list[str]], target: list) -> None:
        refs = _as_refs(target)
        if len(preds) != len(refs):
            raise ValueError(f"{len(preds)} predictions but {len(refs)} targets")
        for p, r in zip(preds, refs, strict=True):
            self.wrong += int(all(p != x for x in r))
            self.total += 1

    def compute(self) -> torch.Tensor:
        return self.wrong.float() / self.total.clamp(min=1).float()
