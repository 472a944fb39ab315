"""The files ``vecset predict`` writes for speech, appended frame by frame as predictions come.

Per input file: ``<name>.frames`` (frame, centre sample, label, probability) and ``<name>.phn``
(merged segments, TIMIT format); plus ``predictions.csv`` as an index. A long recording
arrives in chunks: its .frames grows chunk by chunk, its labels are kept as one small integer
per frame (2 bytes: 7 MB for 3 hours) and merged into segments when its last frame has come.
Sample numbers are the audio file's own, at its rate (TIMIT's convention); a frame centre is
fractional there when the rate is not a multiple of 100 Hz (exact decimals).
"""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path
from typing import TextIO

import numpy as np

from vecset.encoders.speech import FRAME_LENGTH, FRAME_SHIFT, SAMPLE_RATE, frames_to_segments


class _Open:
    """One input file being written: its .frames handle, the labels so far and where they end."""

    def __init__(self, name: str, audio: Path, handle: TextIO, frames: int, rate: int, n_samples: int) -> None:
        self.name, self.audio, self.handle = name, audio, handle
        self.labels = np.zeros(frames, dtype=np.int16)
        self.next, self.rate, self.n_samples = 0, rate, n_samples


class SpeechPredictionFiles:
    """Writes the prediction files of one ``vecset predict`` run under ``out_dir``.

    ``add`` takes the next frames of one input (in order, frame ``start`` onwards); when an
    input's last frame has come its .phn is written. ``close`` writes predictions.csv and
    returns its path; an input still incomplete then is an error (frames went missing).
    """

    def __init__(self, out_dir: Path, class_names: list[str]) -> None:
        self.out_dir = Path(out_dir)
        self.pred_dir = self.out_dir / "predictions"
        self.pred_dir.mkdir(parents=True, exist_ok=True)
        self.class_names = class_names
        self.index: list[dict] = []
        self.used: set[str] = set()
        self.open: dict[int, _Open] = {}

    def _start(self, sid: int, audio: Path, frames: int, rate: int, n_samples: int) -> _Open:
        name = f"{audio.parent.name}_{audio.stem}" if audio.parent.name else audio.stem
        if name in self.used:  # same folder and file name under different parents: keep both
            name = f"{name}_{sid}"
        self.used.add(name)
        handle = open(self.pred_dir / f"{name}.frames", "w")
        handle.write(f"# frame centre_sample label probability (samples at {rate} Hz, the audio file's rate)\n")
        return _Open(name, audio, handle, frames, rate, n_samples)

    def add(self, sid: int, audio: Path, frames: int, rate: int, n_samples: int, start: int,
            labels: list[int], probs: list[float]) -> None:
        """Frames ``start`` .. ``start + len(labels) - 1`` of input ``sid`` (``frames`` in all)."""
        f = self.open.get(sid)
        if f is None:
            f = self.open[sid] = self._start(sid, audio, frames, rate, n_samples)
        if start != f.next:
            raise RuntimeError(f"{audio}: predictions for frames from {start} arrived after frame {f.next - 1}; "
                               "chunks must come in order")
        if start + len(labels) > frames:
            raise RuntimeError(f"{audio}: predictions up to frame {start + len(labels)}, the file has {frames}")
        names = self.class_names
        lines = []
        for t, (lab, p) in enumerate(zip(labels, probs, strict=True), start):
            # 16 kHz centre * rate / 16000: a terminating decimal, printed exactly
            centre = Decimal((t * FRAME_SHIFT + FRAME_LENGTH // 2) * rate) / SAMPLE_RATE
            lines.append(f"{t} {centre} {names[lab]} {p:.4f}\n")
        f.handle.write("".join(lines))
        f.labels[start:start + len(labels)] = labels
        f.next = start + len(labels)
        if f.next == frames:
            self._finish(sid)

    def _finish(self, sid: int) -> None:
        f = self.open.pop(sid)
        f.handle.close()
        labels = [self.class_names[j] for j in f.labels.tolist()]
        segs = frames_to_segments(labels, f.n_samples, f.rate)
        phn = self.pred_dir / f"{f.name}.phn"
        with open(phn, "w") as out:
            out.writelines(f"{s.start} {s.end} {s.phone}\n" for s in segs)
        self.index.append({"input": str(f.audio), "frames": len(labels), "segments": len(segs), "phn": str(phn)})

    def close(self) -> Path:
        if self.open:
            missing = ", ".join(f"{f.audio} (frames {f.next}.. of {len(f.labels)})" for f in self.open.values())
            for f in self.open.values():
                f.handle.close()
            raise RuntimeError(f"predictions incomplete for {missing}")
        path = self.out_dir / "predictions.csv"
        with open(path, "w", newline="") as out:
            w = csv.DictWriter(out, fieldnames=["input", "frames", "segments", "phn"])
            w.writeheader()
            w.writerows(self.index)
        return path
