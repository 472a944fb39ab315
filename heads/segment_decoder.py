"""SegmentDecoder: frame log-posteriors -> label segments without one-frame flicker.

Merging the per-frame argmax into segments turns every frame where the argmax flips into a
segment of its own. The decoder instead finds the label sequence y_1..T that maximises

    sum_t log p_t(y_t)  -  switch_penalty * (number of t with y_t != y_{t-1})

subject to every run of equal labels lasting at least ``min_duration`` frames: Viterbi
decoding (Viterbi 1967) over a loop of all labels, the "phone loop" of phone recognisers, in
which each label is a chain of ``min_duration`` states (the last one with a self-loop; an
HMM with a minimum duration, Rabiner 1989 sec. VI) and every jump from one label to another
costs ``switch_penalty`` (in nats: log-domain, like the posteriors). With penalty 0 and
minimum duration 1 the best sequence is the frame-wise argmax. The first and the last run
obey the minimum too; an input shorter than ``min_duration`` frames is one run (the label
with the highest summed log-posterior).

Exact: a dynamic programme over (label, frames into its run, capped at min_duration) per
frame, vectorised over the labels; O(T * C * min_duration) time, O(T * C) back-pointers.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


class SegmentDecoder:
    """Viterbi over a label loop with a switch penalty and a minimum duration.

    Args:
        switch_penalty: log-domain cost (nats) added at every change of label (>= 0).
        min_duration: the fewest frames a run of one label may last (>= 1).

    Shapes:
        log_probs (T, C) frame log-posteriors (or logits: only their per-frame log-softmax
        is used) -> labels (T,) int64.
    """

    def __init__(self, switch_penalty: float = 0.0, min_duration: int = 1) -> None:
        if not switch_penalty >= 0:
            raise ValueError(f"switch_penalty must be >= 0 (nats per change of label), got {switch_penalty}")
        if int(min_duration) != min_duration or min_duration < 1:
            raise ValueError(f"min_duration must be an integer >= 1 (frames), got {min_duration}")
        self.switch_penalty, self.min_duration = float(switch_penalty), int(min_duration)

    def __repr__(self) -> str:
        return f"SegmentDecoder(switch_penalty={self.switch_penalty}, min_duration={self.min_duration})"

    def __call__(self, log_probs: Tensor | np.ndarray) -> np.ndarray:
        lp = torch.as_tensor(log_probs).detach().to("cpu", torch.float64)
        if lp.dim() != 2:
            raise ValueError(f"expected frame log-posteriors of shape (T, C), got {tuple(lp.shape)}")
        lp = torch.log_softmax(lp, dim=-1).numpy()  # (T, C)
        return viterbi(lp, self.switch_penalty, self.min_duration)


def viterbi(lp: np.ndarray, penalty: float, min_duration: int) -> np.ndarray:
    """The best label sequence of the module docstring for log-posteriors ``lp`` (T, C)."""
    T, C = lp.shape
    D = min_duration
    if T == 0:
        return np.zeros(0, dtype=np.int64)
    if T < D:  # no sequence obeys the minimum: one run
        return np.full(T, int(lp.sum(0).argmax()), dtype=np.int64)
    NEG = -np.inf
    # score[d, c]: the best path ending at this frame in label c, d+1 frames into its run
    # (d = D-1: D or more frames, the only state that may be left for another label, or end)
    score = np.full((D, C), NEG)
    score[0] = lp[0]
    # back-pointers: entry[t, c] = the label before a run of c that starts at frame t;
    # stayed[t, c] = the path in state (D-1, c) at t was in (D-1, c) at t-1 too
    entry = np.zeros((T, C), dtype=np.int32)
    stayed = np.zeros((T, C), dtype=bool)
    labels = np.arange(C)
    for t in range(1, T):
        last = score[D - 1]  # (C,)
        best = int(last.argmax())
        others = np.where(labels == best, NEG, last)
        second = int(others.argmax())
        # the best label other than c to come from: the best one, unless it is c itself
        src = np.where(labels == best, second, best)  # (C,)
        switch = (last[src] if C > 1 else np.full(C, NEG)) - penalty  # (C,)
        entry[t] = src
        new = np.empty_like(score)
        if D == 1:
            stayed[t] = last >= switch
            new[0] = np.maximum(last, switch)
        else:
            new[0] = switch
            new[1:D - 1] = score[0:D - 2]
            stayed[t] = last >= score[D - 2]
            new[D - 1] = np.maximum(last, score[D - 2])
        score = new + lp[t]
    # trace back from the best state allowed to end
    out = np.empty(T, dtype=np.int64)
    c, d = int(score[D - 1].argmax()), D - 1
    for t in range(T - 1, -1, -1):
        out[t] = c
        if t == 0:
            break
        if d == D - 1 and stayed[t, c]:
            continue  # (D-1, c) at t-1 too
        if d == 0 or D == 1:  # the run of c began at t: the label before it
            c, d = int(entry[t, c]), D - 1
        else:
            d -= 1
    return out
