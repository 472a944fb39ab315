"""Scores of predicted phone segments against the reference alignment (the ``.phn`` files):
the segment phone error rate and phone-boundary precision / recall / F1 within a tolerance.

Both score the 39-class sequence of TIMIT scoring (Lee & Hon 1989; ``scoring_phones``): a
predicted segment is a run of equal frame labels, and neighbours that fold into one class are
one segment. Segment PER = Levenshtein distance between the predicted and the reference phone
sequences, silences dropped, summed over utterances / the reference phones. A boundary is the
start of every segment but the first (silences kept: a phone-to-pause change is a boundary);
the reference boundaries lie at the ``.phn``'s sample numbers, a predicted one halfway between
the centres of the frames either side (``frames_to_segments``). A predicted boundary is a hit
when it lies within the tolerance of a reference boundary, inclusive (|p - r| <= 20 ms: exactly
20 ms is a hit), each reference boundary matched at most once: the largest one-to-one matching,
found by a greedy pass over both sorted lists (optimal for points on a line: a test holds it
equal to scipy's maximum bipartite matching). Precision = hits / predicted boundaries, recall =
hits / reference boundaries, pooled over utterances (the phone segmentation convention, e.g.
Kreuk et al. 2020, "Self-supervised contrastive learning for unsupervised phoneme segmentation").
Times are compared exactly, in integer units of 1 / (16000 * rate) s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vecset.encoders.speech import (
    FRAME_LENGTH,
    FRAME_SHIFT,
    SAMPLE_RATE,
    Segment,
    fold39_runs,
    scoring_phones,
)
from vecset.heads.edit_metrics import PhoneErrorRate


def match_boundaries(pred: Sequence[int], ref: Sequence[int], tolerance: int) -> int:
    """The size of the largest one-to-one matching of ``pred`` to ``ref`` points with
    |p - r| <= tolerance (both sorted ascending)."""
    i = j = hits = 0
    while i < len(pred) and j < len(ref):
        if abs(pred[i] - ref[j]) <= tolerance:
            hits, i, j = hits + 1, i + 1, j + 1
        elif pred[i] < ref[j]:
            i += 1  # too early for this and every later reference
        else:
            j += 1
    return hits


def frame_segments(labels: np.ndarray, names: list[str]) -> tuple[list[str], list[int]]:
    """Runs of equal frame labels: their phone names and start frames."""
    labels = np.asarray(labels)
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]]) if len(labels) else np.zeros(0, int)
    return [names[int(labels[s])] for s in starts], starts.tolist()


@dataclass
class SegmentTally:
    """Sums over utterances for one way of making segments (argmax merging, the decoder)."""

    hypothesis_phones: int = 0
    predicted_boundaries: int = 0
    hits: int = 0
    frames: int = 0
    correct: int = 0

    def __post_init__(self) -> None:
        self.per = PhoneErrorRate()


class SegmentScores:
    """Segment PER and boundary P/R/F1 of several segmentations of the same utterances.

    Args:
        names: the class names of the frame labels.
        tolerance_ms: the boundary tolerance (inclusive).
    """

    def __init__(self, names: list[str], tolerance_ms: int = 20) -> None:
        self.names, self.tolerance_ms = names, tolerance_ms
        self.tallies: dict[str, SegmentTally] = {}
        self.reference_phones = self.reference_boundaries = 0

    def update(self, reference: list[Segment], sample_rate: int, predictions: dict[str, np.ndarray],
               y: np.ndarray | None = None) -> None:
        """One utterance: its reference segments (in samples at ``sample_rate``) and, per
        segmentation, its frame labels (T,); ``y`` (T,) the reference frame labels (-1 or below:
        ignored) for each segmentation's frame accuracy."""
        ref_phones = [s.phone for s in reference]
        ref_seq = scoring_phones(ref_phones)
        # exact times in units of 1 / (16000 * rate) s
        ref_b = [reference[i].start * SAMPLE_RATE for i in fold39_runs(ref_phones)[1:]]
        tol = self.tolerance_ms * SAMPLE_RATE * sample_rate // 1000
        self.reference_phones += len(ref_seq)
        self.reference_boundaries += len(ref_b)
        for name, labels in predictions.items():
            t = self.tallies.setdefault(name, SegmentTally())
            phones, starts = frame_segments(labels, self.names)
            hyp = scoring_phones(phones)
            t.per.update([hyp], [ref_seq])
            t.hypothesis_phones += len(hyp)
            # a run starting at frame f begins halfway between the centres of frames f-1 and f
            pred_b = [(starts[i] * FRAME_SHIFT + FRAME_LENGTH // 2 - FRAME_SHIFT // 2) * sample_rate
                      for i in fold39_runs(phones)[1:]]
            t.predicted_boundaries += len(pred_b)
            t.hits += match_boundaries(pred_b, ref_b, tol)
            if y is not None:
                keep = y >= 0
                t.frames += int(keep.sum())
                t.correct += int((np.asarray(labels)[keep] == y[keep]).sum())

    def compute(self) -> dict:
        """Per segmentation: ``phones`` (hypothesis), ``per``, ``boundary_precision``,
        ``boundary_recall``, ``boundary_f1``, ``frame_accuracy``; plus the reference counts."""
        out: dict = {"reference_phones": self.reference_phones, "reference_boundaries": self.reference_boundaries,
                     "boundary_tolerance_ms": self.tolerance_ms}
        for name, t in self.tallies.items():
            p = t.hits / t.predicted_boundaries if t.predicted_boundaries else 0.0
            r = t.hits / self.reference_boundaries if self.reference_boundaries else 0.0
            out[name] = {"phones": t.hypothesis_phones, "per": round(float(t.per.compute()), 4),
                         "boundaries": t.predicted_boundaries, "boundary_hits": t.hits,
                         "boundary_precision": round(p, 4), "boundary_recall": round(r, 4),
                         "boundary_f1": round(2 * p * r / (p + r), 4) if p + r else 0.0,
                         "frame_accuracy": round(t.correct / t.frames, 4) if t.frames else None}
        return out
