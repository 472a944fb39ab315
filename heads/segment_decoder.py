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

from pathlib import Path

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
        lp = _check_2d(log_probs)
        stream = self.stream(*lp.shape)
        stream.push(lp)
        return stream.finish()

    def stream(self, num_frames: int, num_classes: int, store: str | None = None) -> ViterbiStream:
        """A decode of ``num_frames`` frames fed in pieces in order (``push``), equal to one call
        on them all; its back-pointers live in a file at ``store`` (np.memmap: 5 bytes per
        frame and label on disk, the RAM stays constant) or in memory (None)."""
        return ViterbiStream(num_frames, num_classes, self.switch_penalty, self.min_duration, store)


def _check_2d(log_probs: Tensor | np.ndarray) -> Tensor:
    lp = torch.as_tensor(log_probs).detach()
    if lp.dim() != 2:
        raise ValueError(f"expected frame log-posteriors of shape (T, C), got {tuple(lp.shape)}")
    return lp


class ViterbiStream:
    """The dynamic programme of the module docstring, fed frame log-posteriors piece by piece
    (``push``, in order) and traced back once every frame has come (``finish``). The forward
    scores are O(C * min_duration); the back-pointers O(T * C), kept in memory or appended to
    two files at ``store`` (``<store>.entry``, ``<store>.stayed``: 5 bytes per frame and label,
    read back piece by piece in the trace-back, so the RAM stays that of one piece): a long
    recording decodes exactly, in chunks, in constant memory."""

    def __init__(self, num_frames: int, num_classes: int, penalty: float, min_duration: int,
                 store: str | None = None) -> None:
        self.T, self.C, self.penalty, self.D, self.t = num_frames, num_classes, penalty, min_duration, 0
        self.total = np.zeros(num_classes)  # summed log-posteriors: the answer when T < min_duration
        self.score: np.ndarray | None = None
        self.store = store
        # back-pointers, per piece (first frame, entry, stayed): entry[t, c] = the label before a
        # run of c that starts at frame t; stayed[t, c] = the path in state (D-1, c) at t was in
        # (D-1, c) at t-1 too. In memory: the arrays; with a store: None (in the files)
        self.pieces: list[tuple[int, np.ndarray | None, np.ndarray | None]] = []
        if store is not None:
            for suffix in ("entry", "stayed"):
                open(f"{store}.{suffix}", "wb").close()

    def push(self, log_probs: Tensor | np.ndarray) -> None:
        """The next frames' log-posteriors (or logits: their log-softmax is used), (n, C)."""
        lp = torch.log_softmax(_check_2d(log_probs).to("cpu", torch.float64), dim=-1).numpy()
        self.push_log_softmaxed(lp)

    def push_log_softmaxed(self, lp: np.ndarray) -> None:
        n, C = lp.shape
        if C != self.C or self.t + n > self.T:
            raise ValueError(f"ViterbiStream of {self.T} frames x {self.C} labels got ({n}, {C}) after "
                             f"{self.t} frames")
        if n == 0:
            return
        self.total += lp.sum(0)
        D, NEG, labels = self.D, -np.inf, np.arange(C)
        entry = np.zeros((n, C), dtype=np.int32)
        stayed = np.zeros((n, C), dtype=bool)
        start = 0
        if self.score is None:
            # score[d, c]: the best path ending at this frame in label c, d+1 frames into its run
            # (d = D-1: D or more frames, the only state that may be left for another label, or end)
            self.score = np.full((D, C), NEG)
            self.score[0] = lp[0]
            start = 1
        score = self.score
        for i in range(start, n):
            last = score[D - 1]  # (C,)
            best = int(last.argmax())
            others = np.where(labels == best, NEG, last)
            second = int(others.argmax())
            # the best label other than c to come from: the best one, unless it is c itself
            src = np.where(labels == best, second, best)  # (C,)
            switch = (last[src] if C > 1 else np.full(C, NEG)) - self.penalty  # (C,)
            entry[i] = src
            new = np.empty_like(score)
            if D == 1:
                stayed[i] = last >= switch
                new[0] = np.maximum(last, switch)
            else:
                new[0] = switch
                new[1:D - 1] = score[0:D - 2]
                stayed[i] = last >= score[D - 2]
                new[D - 1] = np.maximum(last, score[D - 2])
            score = new + lp[i]
        self.score = score
        if self.store is None:
            self.pieces.append((self.t, entry, stayed))
        else:
            for arr, suffix in ((entry, "entry"), (stayed, "stayed")):
                with open(f"{self.store}.{suffix}", "ab") as f:
                    f.write(arr.tobytes())
            self.pieces.append((self.t, None, None))
        self.t += n

    def _piece(self, k: int) -> tuple[int, np.ndarray, np.ndarray]:
        t0, entry, stayed = self.pieces[k]
        if entry is None:
            n = (self.pieces[k + 1][0] if k + 1 < len(self.pieces) else self.T) - t0
            entry = np.fromfile(f"{self.store}.entry", np.int32, n * self.C, offset=t0 * self.C * 4)
            stayed = np.fromfile(f"{self.store}.stayed", bool, n * self.C, offset=t0 * self.C)
            entry, stayed = entry.reshape(n, self.C), stayed.reshape(n, self.C)
        return t0, entry, stayed

    def finish(self) -> np.ndarray:
        """The best label sequence (T,) int64; the back-pointer files are removed."""
        T, D = self.T, self.D
        if self.t != T:
            raise ValueError(f"ViterbiStream of {T} frames finished after {self.t}")
        out = np.empty(T, dtype=np.int64)
        if 0 < T < D:  # no sequence obeys the minimum: one run
            out[:] = int(self.total.argmax())
        elif T:
            # trace back from the best state allowed to end, one piece of back-pointers at a time
            c, d = int(self.score[D - 1].argmax()), D - 1
            k = len(self.pieces) - 1
            t0, entry, stayed = self._piece(k)
            for t in range(T - 1, -1, -1):
                out[t] = c
                if t == 0:
                    break
                if t < t0:
                    k -= 1
                    t0, entry, stayed = self._piece(k)
                if d == D - 1 and stayed[t - t0, c]:
                    continue  # (D-1, c) at t-1 too
                if d == 0 or D == 1:  # the run of c began at t: the label before it
                    c, d = int(entry[t - t0, c]), D - 1
                else:
                    d -= 1
        self.discard()
        return out

    def discard(self) -> None:
        """Remove the back-pointer files (also for a decode that will not finish)."""
        if self.store is not None:
            for suffix in ("entry", "stayed"):
                Path(f"{self.store}.{suffix}").unlink(missing_ok=True)
