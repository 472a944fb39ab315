"""SegmentDecoder: exact against a brute-force search over every label sequence, the argmax at
penalty 0 / minimum duration 1, a one-frame flicker removed, a long input. Its speed on ten
minutes of frames is a benchmark: bench/segment_decoder_speed.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from vecset.heads.segment_decoder import SegmentDecoder


def brute_force(lp: np.ndarray, penalty: float, min_duration: int) -> tuple[float, tuple[int, ...]]:
    """The best score and sequence over all C^T sequences whose runs last >= min_duration."""
    T, C = lp.shape
    best = (-np.inf, ())
    for seq in itertools.product(range(C), repeat=T):
        runs = [len(list(g)) for _, g in itertools.groupby(seq)]
        if min(runs) < min_duration:
            continue
        s = sum(lp[t, c] for t, c in enumerate(seq)) - penalty * (len(runs) - 1)
        best = max(best, (s, seq))
    return best


def score(lp: np.ndarray, seq: np.ndarray, penalty: float) -> float:
    return float(lp[np.arange(len(seq)), seq].sum() - penalty * (seq[1:] != seq[:-1]).sum())


@pytest.mark.parametrize("penalty,min_duration", [(0.0, 1), (0.7, 1), (2.5, 1), (0.0, 2), (0.5, 3), (1.0, 4)])
def test_exact_against_brute_force(penalty, min_duration):
    rng = np.random.default_rng(0)
    for trial in range(12):
        T, C = int(rng.integers(1, 8)), int(rng.integers(1, 4))
        logits = rng.normal(scale=2.0, size=(T, C))
        lp = torch.log_softmax(torch.tensor(logits), -1).numpy()
        got = SegmentDecoder(penalty, min_duration)(torch.tensor(logits))
        if T < min_duration:  # no sequence obeys the minimum: one run, the best label overall
            assert got.tolist() == [int(lp.sum(0).argmax())] * T
            continue
        s, seq = brute_force(lp, penalty, min_duration)
        assert score(lp, got, penalty) == pytest.approx(s, abs=1e-9), (trial, T, C)
        assert tuple(got.tolist()) == seq  # random scores: the best sequence is unique


def test_penalty_zero_and_duration_one_is_the_argmax():
    torch.manual_seed(0)
    logits = torch.randn(500, 42) * 3
    assert SegmentDecoder(0.0, 1)(logits).tolist() == logits.argmax(-1).tolist()


def test_a_one_frame_flicker_is_removed():
    # frames: a a b a a, with b only slightly above a at frame 2 (log-probs of 2 labels)
    p = np.array([[0.9, 0.1], [0.9, 0.1], [0.45, 0.55], [0.9, 0.1], [0.9, 0.1]])
    lp = np.log(p)
    assert SegmentDecoder(0.0, 1)(lp).tolist() == [0, 0, 1, 0, 0]  # argmax: a one-frame b
    # the flicker gains log(0.55/0.45) = 0.20 nats and costs two switches
    assert SegmentDecoder(0.15, 1)(lp).tolist() == [0, 0, 0, 0, 0]
    assert SegmentDecoder(0.05, 1)(lp).tolist() == [0, 0, 1, 0, 0]
    assert SegmentDecoder(0.0, 2)(lp).tolist() == [0, 0, 0, 0, 0]  # a run of 1 is not allowed
    # a real change survives the penalty: b for 3 frames
    p2 = np.array([[0.9, 0.1]] * 3 + [[0.2, 0.8]] * 3 + [[0.9, 0.1]] * 3)
    assert SegmentDecoder(1.0, 3)(np.log(p2)).tolist() == [0] * 3 + [1] * 3 + [0] * 3


def test_bad_settings_are_errors():
    with pytest.raises(ValueError, match="switch_penalty must be >= 0"):
        SegmentDecoder(-1.0)
    with pytest.raises(ValueError, match="min_duration must be an integer >= 1"):
        SegmentDecoder(1.0, 0)
    with pytest.raises(ValueError, match=r"expected frame log-posteriors of shape \(T, C\)"):
        SegmentDecoder()(torch.zeros(2, 3, 4))


def test_a_long_input_keeps_the_minimum_duration():
    torch.manual_seed(0)
    logits = torch.randn(6_000, 50) * 3  # 1 minute of 10 ms frames, 50 phones: noise, flips every frame
    out = SegmentDecoder(2.0, 3)(logits)
    assert out.shape == (6_000,)
    runs = np.diff(np.flatnonzero(np.diff(np.r_[-1, out, -1]) != 0))
    assert runs.min() >= 3 and len(runs) > 100  # many runs, none shorter than the minimum


@pytest.mark.parametrize("on_disk", [False, True], ids=["memory", "files"])
def test_fed_in_pieces_equals_one_call(tmp_path, on_disk):
    """Chunked predict feeds a recording's frames in pieces (of any size, one frame included):
    the labels equal one call on the whole; a back-pointer file is removed at the end."""
    torch.manual_seed(1)
    logits = torch.randn(700, 6) * 1.5
    dec = SegmentDecoder(2.0, 3)
    whole = dec(logits)
    assert (np.diff(whole) != 0).sum() > 20  # many runs: the pieces cut through some of them
    stream = dec.stream(700, 6, store=str(tmp_path / "bp") if on_disk else None)
    for a, b in [(0, 1), (1, 250), (250, 251), (251, 700)]:
        stream.push(logits[a:b])
    assert stream.finish().tolist() == whole.tolist()
    assert list(tmp_path.iterdir()) == []


def test_a_stream_fed_too_much_or_too_little_is_an_error():
    stream = SegmentDecoder(1.0, 2).stream(5, 3)
    stream.push(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="finished after 3"):
        stream.finish()
    with pytest.raises(ValueError, match=r"got \(3, 3\) after 3 frames"):
        stream.push(torch.zeros(3, 3))
