"""The files ``vecset predict`` writes for speech, appended frame by frame as predictions come.

Per input file: ``<name>.frames`` (frame, centre sample, argmax label, its probability, and the
head's segment decoder's label when it has one) and ``<name>.phn`` (TIMIT format: the decoder's
segments, or the runs of the argmax labels without a decoder or with ``predict_segments:
argmax``); plus ``predictions.csv`` as an index (its ``segments_from`` says which). A long
recording arrives in chunks: its frames' labels and probabilities are kept in small arrays (8
bytes a frame: 8.6 MB for 3 hours), and its .frames and .phn are written when its last frame has
come. With the head's segment decoder, the log-posteriors feed one ``SegmentDecoder.stream`` per
recording; a recording in several chunks keeps its back-pointers in files beside the predictions
until its last frame (then the decode is traced back and the files are removed): the same
segments as a whole-recording decode.
Sample numbers are the audio file's own, at its rate (TIMIT's convention); a frame centre is
fractional there when the rate is not a multiple of 100 Hz (exact decimals).
"""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import numpy as np
from torch import Tensor

from vecset.encoders.speech import (
    FRAME_LENGTH,
    FRAME_SHIFT,
    SAMPLE_RATE,
    AudioFile,
    frames_to_segments,
    write_phn,
)
from vecset.heads.segment_decoder import SegmentDecoder, ViterbiStream
from vecset.pipelines.predict.output import PredictionOutput


class _Open:
    """One input file being predicted: its frames' argmax labels, probabilities and segment
    labels so far (8 bytes a frame: 8.6 MB for 3 hours) and where they end."""

    def __init__(self, name: str, file: AudioFile, stream: ViterbiStream | None) -> None:
        self.name, self.audio, self.stream = name, file.path, stream
        self.decoded = stream is not None
        self.argmax = np.zeros(file.frames, dtype=np.int16)
        self.probs = np.zeros(file.frames, dtype=np.float32)
        self.labels = np.zeros(file.frames, dtype=np.int16)  # the decoder's, or the argmax
        self.next, self.rate, self.n_samples = 0, file.sample_rate, file.samples


class SpeechPredictionFiles:
    """Writes the prediction files of one ``vecset predict`` run under ``out_dir``.

    ``add`` takes the next frames of one input (in order, frame ``start`` onwards) and, to be
    decoded with ``decoder``, their log-posteriors; when an input's last frame has come its .phn
    is written. ``close`` writes predictions.csv and returns its path; an input still incomplete
    then is an error (frames went missing).
    """

    def __init__(self, out_dir: Path, class_names: list[str], decoder: SegmentDecoder | None = None) -> None:
        self.decoder = decoder
        self.out_dir = Path(out_dir)
        self.pred_dir = self.out_dir / "predictions"
        self.pred_dir.mkdir(parents=True, exist_ok=True)
        self.class_names = class_names
        self.index: list[dict] = []
        self.used: set[str] = set()
        self.open: dict[int, _Open] = {}

    def _start(self, sid: int, file: AudioFile, decoded: bool, whole: bool) -> _Open:
        audio = file.path
        name = f"{audio.parent.name}_{audio.stem}" if audio.parent.name else audio.stem
        if name in self.used:  # same folder and file name under different parents: keep both
            name = f"{name}_{sid}"
        self.used.add(name)
        stream = None
        if decoded:
            if self.decoder is None:
                raise ValueError(f"{audio}: log-posteriors came to be decoded, but no decoder was given")
            # a recording in one piece is decoded in memory; one in chunks keeps its back-pointers on disk
            store = None if whole else str(self.pred_dir / f".{name}.viterbi")
            stream = self.decoder.stream(file.frames, len(self.class_names), store=store)
        return _Open(name, file, stream)

    def add(self, sid: int, file: AudioFile, start: int, labels: list[int], probs: list[float],
            log_probs: Tensor | None = None) -> None:
        """Frames ``start`` .. ``start + len(labels) - 1`` of input ``sid`` (``file.frames`` in
        all); ``log_probs`` (n, C): theirs, to decode (None: the .phn merges the argmax)."""
        frames = file.frames
        f = self.open.get(sid)
        if f is None:
            f = self.open[sid] = self._start(sid, file, log_probs is not None, start == 0 and len(labels) == frames)
        if f.decoded != (log_probs is not None):
            raise RuntimeError(f"{file.path}: its chunks came with different kinds of decoder output")
        if start != f.next:
            raise RuntimeError(f"{file.path}: predictions for frames from {start} arrived after frame {f.next - 1}; "
                               "chunks must come in order")
        if start + len(labels) > frames:
            raise RuntimeError(f"{file.path}: predictions up to frame {start + len(labels)}, the file has {frames}")
        end = start + len(labels)
        f.argmax[start:end], f.probs[start:end] = labels, probs
        f.labels[start:end] = labels
        if f.stream is not None:
            f.stream.push(log_probs)
        f.next = end
        if f.next == frames:
            self._finish(sid)

    def _finish(self, sid: int) -> None:
        f = self.open.pop(sid)
        if f.stream is not None:
            f.labels[:] = f.stream.finish()
        self._write_frames(f)
        labels = [self.class_names[j] for j in f.labels.tolist()]
        segs = frames_to_segments(labels, f.n_samples, f.rate)
        phn = self.pred_dir / f"{f.name}.phn"
        write_phn(phn, segs)
        self.index.append({"input": str(f.audio), "frames": len(labels), "segments": len(segs),
                           "segments_from": "decoder" if f.decoded else "argmax", "phn": str(phn)})

    def _write_frames(self, f: _Open, block: int = 10_000) -> None:
        """``<name>.frames``: frame, centre sample, argmax label, its probability (and the
        decoder's label), written a block of lines at a time."""
        names, rate = self.class_names, f.rate
        with open(self.pred_dir / f"{f.name}.frames", "w") as out:
            out.write(f"# frame centre_sample label probability{' segment_label' if f.decoded else ''} "
                      f"(samples at {rate} Hz, the audio file's rate)\n")
            for a in range(0, len(f.labels), block):
                lines = []
                b = min(a + block, len(f.labels))
                for t, lab, p, seg in zip(range(a, b), f.argmax[a:b].tolist(), f.probs[a:b].tolist(),
                                          f.labels[a:b].tolist(), strict=True):
                    # 16 kHz centre * rate / 16000: a terminating decimal, printed exactly
                    centre = Decimal((t * FRAME_SHIFT + FRAME_LENGTH // 2) * rate) / SAMPLE_RATE
                    lines.append(f"{t} {centre} {names[lab]} {p:.4f}{f' {names[seg]}' if f.decoded else ''}\n")
                out.write("".join(lines))

    def close(self) -> Path:
        if self.open:
            missing = ", ".join(f"{f.audio} (frames {f.next}.. of {len(f.labels)})" for f in self.open.values())
            for f in self.open.values():
                if f.stream is not None:
                    f.stream.discard()
            raise RuntimeError(f"predictions incomplete for {missing}")
        path = self.out_dir / "predictions.csv"
        with open(path, "w", newline="") as out:
            w = csv.DictWriter(out, fieldnames=["input", "frames", "segments", "segments_from", "phn"])
            w.writeheader()
            w.writerows(self.index)
        return path


class SpeechOutput(PredictionOutput):
    """``vecset predict`` for speech: each batch's predictions appended to their files
    (``SpeechPredictionFiles``) as they come; of a chunk only its core (``batch["keep"]``), at
    its place in the recording. The .phn holds the head's segment decoder's segments when it
    has one and ``data.predict_segments`` is ``decoder``, else the argmax merged.

    Args:
        data: the speech data module (``class_names``, ``audio_file(sid)``, ``predict_segments``).
        out_dir: the run directory.
        decoder: the head's ``segment_decoder()``.
    """

    streams = True

    def __init__(self, data, out_dir: Path, decoder: SegmentDecoder | None = None) -> None:
        self.data = data
        self.decoder = decoder if data.predict_segments == "decoder" else None
        self.files = SpeechPredictionFiles(out_dir, list(data.class_names), self.decoder)

    def add(self, ids: list[int], preds: dict, batch: dict) -> None:
        log_probs = preds.get("log_prob") if self.decoder is not None else None
        for i, sid in enumerate(ids):
            a, b, start = 0, len(preds["label"][i]), 0
            if "keep" in batch:
                a, b = batch["keep"][i].tolist()
                start = int(batch["offsets"][i]) + a
            self.files.add(sid, self.data.audio_file(sid), start, preds["label"][i][a:b], preds["prob"][i][a:b],
                           log_probs=None if log_probs is None else log_probs[i][a:b])

    def close(self) -> Path:
        """Close the run's prediction files; the index predictions.csv."""
        return self.files.close()
