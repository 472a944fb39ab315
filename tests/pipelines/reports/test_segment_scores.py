"""Segment scores: the greedy boundary matching is a maximum one-to-one matching (scipy),
boundary P/R/F1 on hand-built cases (the 20 ms edge is a hit, one sample more is not), segment
PER of known sequences (39-class folding, silences dropped)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from vecset.encoders.speech import FESTIVAL_PHONES, Segment, scoring_phones
from vecset.pipelines.speech.segment_scores import SegmentScores, match_boundaries

NAMES = list(FESTIVAL_PHONES)
ID = {p: i for i, p in enumerate(NAMES)}


def frames(*runs: tuple[str, int]) -> np.ndarray:
    return np.array([ID[p] for p, n in runs for _ in range(n)])


def test_greedy_matching_is_a_maximum_matching():
    rng = np.random.default_rng(0)
    for _ in range(300):
        pred = np.sort(rng.integers(0, 60, rng.integers(0, 9)))
        ref = np.sort(rng.integers(0, 60, rng.integers(0, 9)))
        tol = int(rng.integers(0, 8))
        adj = np.abs(pred[:, None] - ref[None, :]) <= tol
        best = 0
        if adj.size:
            best = int((maximum_bipartite_matching(csr_matrix(adj.astype(np.int8)), perm_type="column") >= 0).sum())
        assert match_boundaries(pred.tolist(), ref.tolist(), tol) == best


def scores(ref: list[Segment], labels: np.ndarray, rate: int = 16000) -> dict:
    s = SegmentScores(NAMES)
    s.update(ref, rate, {"argmax": labels})
    return s.compute()


@pytest.mark.parametrize("ref_boundary,hit", [(1400, True), (1401, False), (760, True), (759, False)])
def test_a_boundary_exactly_20_ms_away_is_a_hit(ref_boundary, hit):
    # frames 0-5 h#, 6-29 aa: the predicted boundary lies between the centres of frames 5 and 6,
    # at 6 * 160 + 120 = 1080 samples; 20 ms = 320 samples at 16 kHz
    labels = frames(("h#", 6), ("aa", 24))
    ref = [Segment(0, ref_boundary, "h#"), Segment(ref_boundary, 5040, "aa")]
    sc = scores(ref, labels)["argmax"]
    assert (sc["boundary_hits"], sc["boundary_precision"], sc["boundary_recall"], sc["boundary_f1"]) == (
        (1, 1.0, 1.0, 1.0) if hit else (0, 0.0, 0.0, 0.0))
    # at 8 kHz the reference counts the file's own samples, compared exactly: 20 ms is 160 of
    # them, the predicted boundary lies at 540 (67.5 ms)
    b8 = {1400: 700, 1401: 701, 760: 380, 759: 379}[ref_boundary]
    ref8 = [Segment(0, b8, "h#"), Segment(b8, 2520, "aa")]
    assert scores(ref8, labels, rate=8000)["argmax"]["boundary_hits"] == int(hit)


def test_each_reference_boundary_matches_once_and_folded_neighbours_are_no_boundary():
    # predicted boundaries at 1080 (h#|aa) and 1400 (aa|b), both 10 ms from the one reference
    # boundary at 1240: one hit; then ax|ah (both ah in 39 classes) is no boundary
    labels = frames(("h#", 6), ("aa", 2), ("b", 10), ("ax", 6), ("ah", 6))
    ref = [Segment(0, 1240, "h#"), Segment(1240, 5040, "aa")]
    sc = scores(ref, labels)
    assert sc["reference_boundaries"] == 1 and sc["argmax"]["boundaries"] == 3  # h#|aa, aa|b, b|ax
    assert sc["argmax"]["boundary_hits"] == 1
    assert sc["argmax"]["boundary_precision"] == round(1 / 3, 4) and sc["argmax"]["boundary_recall"] == 1.0
    assert sc["argmax"]["boundary_f1"] == 0.5  # 2 * (1/3) * 1 / (1/3 + 1)


def test_segment_per_of_known_sequences():
    assert scoring_phones(["h#", "ax", "ah", "b", "pau", "b", "brth", "zh", "h#"]) == ["ah", "b", "b", "sh"]
    # reference aa b b (pau between the two b, dropped); hypothesis aa b: one deletion in 3
    ref = [Segment(0, 800, "h#"), Segment(800, 1600, "aa"), Segment(1600, 2400, "b"), Segment(2400, 3200, "pau"),
           Segment(3200, 4000, "b"), Segment(4000, 5040, "h#")]
    s = SegmentScores(NAMES)
    s.update(ref, 16000, {"argmax": frames(("h#", 5), ("aa", 5), ("b", 10), ("h#", 10)),
                          "decoder": frames(("h#", 5), ("aa", 5), ("b", 5), ("pau", 5), ("b", 5), ("h#", 5))},
             y=frames(("h#", 5), ("aa", 5), ("b", 5), ("pau", 5), ("b", 5), ("h#", 5)))
    # a second utterance: reference ao (-> aa), hypothesis aa k aa: two insertions in 1
    s.update([Segment(0, 2000, "ao")], 16000, {"argmax": frames(("aa", 4), ("k", 1), ("aa", 5)),
                                               "decoder": frames(("aa", 10))})
    out = s.compute()
    assert out["reference_phones"] == 4
    assert out["argmax"]["phones"] == 5 and out["argmax"]["per"] == 0.75  # (1 + 2) / 4
    assert out["decoder"]["phones"] == 4 and out["decoder"]["per"] == 0.0
    assert out["argmax"]["frame_accuracy"] == round(20 / 30, 4) and out["decoder"]["frame_accuracy"] == 1.0
