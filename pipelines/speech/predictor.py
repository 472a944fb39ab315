"""The speech predictor: recordings -> 10 ms frame labels and phone segments
(``vecset.pretrained("speech_frames").predict("a.wav")``, ``vecset predict --model speech_frames
--audio a.wav [--out DIR] [--format textgrid ctm phn]``: a Praat TextGrid, a CTM or a TIMIT .phn
per input, the files aligners' users open in Praat; a run or packed folder of this job).

Segments are the runs of equal frame labels merged (the head's segment decoder's labels where it
has one, else the argmax), their boundaries the inverse of the frame-centre rule
(``encoders/speech/alignment.py``'s ``frames_to_segments``: the first starts at 0, the last ends
with the audio, the others halfway between two 10 ms frame centres), so a file written and read
back by vecset's readers gives the same frame labels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from vecset.pipelines.predictor import Predictor

FILE_SUFFIXES = {"textgrid": ".TextGrid", "ctm": ".ctm", "phn": ".phn"}


class SpeechPredictor(Predictor):
    """Recordings -> their frame labels and phone segments. An input is an audio file (any format
    libsndfile reads, any rate: resampled to 16 kHz) or a pair ``(waveform, sample_rate)`` (a 1-D
    float array in [-1, 1]; ``predict(array, sample_rate=...)`` says the rate once for all).

    The rows: ``frames`` (10 ms frames), ``sample_rate`` (the input's own), ``phones`` (the segments' labels, space-separated),
    ``segments`` (``[start s, end s, label]`` each) and ``labels`` (one per frame). A recording
    is read and run whole (``vecset predict --config`` reads long ones in chunks).

    ``extra``: ``class_names`` (the phone set's labels), ``features``, ``num_mel_bins``, ``num_ceps``.
    """

    input_column, input_flag = "audio", "--audio"
    values = ["frames", "sample_rate", "phones", "segments", "labels"]
    file_formats: ClassVar[tuple[str, ...]] = tuple(FILE_SUFFIXES)
    table_values: ClassVar[list[str] | None] = ["frames", "sample_rate", "phones"]

    def __init__(self, name: str, path: Path, bundle: dict, card: dict) -> None:
        from vecset.encoders.speech import AlignmentSource, Featurizer, SpeechReader

        super().__init__(name, path, bundle, card)
        self.class_names: list[str] = self.extra["class_names"]
        featurizer = Featurizer(self.extra["features"], self.extra["num_mel_bins"], self.extra["num_ceps"])
        # the training data's reader (phone set and features), reading audio only
        self.reader = SpeechReader(self.extra["phone_set"], featurizer, AlignmentSource())
        self.decoder = self.model.head.segment_decoder()

    def predict(self, inputs: Any, batch_size: int = 8, *, column: str | None = None, as_frame: bool = False,
                sample_rate: int | None = None):
        """As ``Predictor.predict``; ``inputs`` may also be one waveform (a 1-D array, with
        ``sample_rate``), a ``(waveform, sample_rate)`` pair or a list of either."""
        if isinstance(inputs, np.ndarray | torch.Tensor) and np.ndim(inputs) == 1:
            inputs = [inputs]
        elif isinstance(inputs, tuple) and len(inputs) == 2 and isinstance(inputs[1], int):
            inputs = [inputs]
        if sample_rate is not None and isinstance(inputs, list | tuple):
            inputs = [v if isinstance(v, str | Path | tuple) else (v, sample_rate) for v in inputs]
        return super().predict(inputs, batch_size, column=column, as_frame=as_frame)

    def describe(self, value: Any) -> str:
        if isinstance(value, str | Path):
            return str(value)
        if isinstance(value, tuple) and len(value) == 2:
            return f"array{list(np.shape(value[0]))} at {value[1]} Hz"
        return f"array{list(np.shape(value))}"

    def prepare(self, value: Any) -> tuple[torch.Tensor, int, int]:
        """(frames (T, F), the audio's own sample rate, its length in samples at that rate)."""
        from vecset.encoders.speech import FRAME_LENGTH, SAMPLE_RATE, featurize

        if isinstance(value, str | Path):
            if not Path(value).is_file():
                raise ValueError(f"{value}: no such audio file")
            u = self.reader.read(Path(value), 0, labelled=False)  # ValueError naming the file
            return u.x, u.sample_rate, u.samples
        if not (isinstance(value, tuple) and len(value) == 2):
            raise ValueError("a waveform needs its sample rate: give (waveform, sample_rate) or predict(..., "
                             "sample_rate=16000)")
        wav, rate = value
        if not (isinstance(rate, int) and rate > 0):
            raise ValueError(f"sample rate must be a positive integer (Hz), got {rate!r}")
        w = torch.as_tensor(np.asarray(wav, dtype=np.float32))
        if w.ndim != 1:
            raise ValueError(f"expected a mono waveform of shape [n], got shape {list(w.shape)}")
        if not torch.isfinite(w).all():
            raise ValueError("a waveform of finite numbers (NaN and infinity are not samples)")
        n = len(w)
        if rate != SAMPLE_RATE:
            import torchaudio.functional as AF

            w = AF.resample(w[None], rate, SAMPLE_RATE)[0]
        if len(w) < FRAME_LENGTH:
            raise ValueError(f"{n} samples at {rate} Hz is shorter than one 25 ms frame")
        return featurize(self.reader.featurizer, w, "the waveform"), rate, n

    def run(self, items: list[tuple[torch.Tensor, int, int]]) -> list[dict]:
        from vecset.encoders.speech import frames_to_segments

        xs = [x for x, _, _ in items]
        lengths = torch.tensor([len(x) for x in xs])
        x = torch.nn.utils.rnn.pad_sequence(xs, batch_first=True)  # (B, T, F)
        mask = torch.arange(x.shape[1])[None] < lengths[:, None]  # (B, T)
        logits = self.model({"x": x, "mask": mask}).float()  # (B, T, C)
        rows = []
        for i, (_, rate, n) in enumerate(items):
            lp = logits[i, : lengths[i]].log_softmax(-1)  # (T, C)
            ids = self.decoder(lp) if self.decoder is not None else lp.argmax(-1).numpy()
            labels = [self.class_names[j] for j in np.asarray(ids).tolist()]
            segs = frames_to_segments(labels, n, rate)
            rows.append({"frames": len(labels), "sample_rate": rate, "phones": " ".join(s.phone for s in segs),
                         "segments": [[s.start / rate, s.end / rate, s.phone] for s in segs], "labels": labels})
        return rows

    # -- files per input (vecset predict --format) ---------------------------------------------
    @staticmethod
    def file_suffix(fmt: str) -> str:
        return FILE_SUFFIXES[fmt]

    def write_file(self, row: dict, path: Path, fmt: str) -> None:
        """``row``'s segments as a TextGrid (a ``phones`` tier, MFA's name), a CTM (utterance id:
        the file's stem) or a .phn (in samples of the input's own rate)."""
        from vecset.encoders.speech import Segment, write_phn
        from vecset.encoders.speech.alignment_ctm import write_ctm
        from vecset.encoders.speech.alignment_textgrid import write_textgrid

        segs = [tuple(s) for s in row["segments"]]
        if fmt == "textgrid":
            write_textgrid(path, {"phones": segs}, segs[-1][1])
        elif fmt == "ctm":
            write_ctm(path, path.stem, segs)
        else:
            rate = row["sample_rate"]
            write_phn(path, [Segment(round(s * rate), round(e * rate), lab) for s, e, lab in segs])

    # -- vecset pack -------------------------------------------------------------------------
    @classmethod
    def pack_extra(cls, config: dict) -> tuple[dict, dict]:
        """The phone set and features of the run's data; its test recordings and their frame
        labels (space-separated; ``-`` where a frame has no class)."""
        from vecset.pipelines.speech.data import SpeechFramesDataModule

        args = dict(config["data"].get("init_args") or {})
        dm = SpeechFramesDataModule(**args)
        dm.setup("test")
        names = dm.class_names
        test = dm.sets["test"].items
        feat = dm.featurizer
        extra = {"class_names": list(names), "phone_set": dm.phone_set, "features": feat.kind,
                 "num_mel_bins": feat.num_mel_bins, "num_ceps": feat.num_ceps}
        return extra, {"inputs": [str(u.path) for u in test],
                       "targets": [" ".join(names[j] if j >= 0 else "-" for j in u.y.tolist()) for u in test]}

    def _score(self, rows: list[dict], targets: list) -> dict:
        """Frame accuracy of the rows' labels (the decoder's: the segments' own) over the frames
        with a class."""
        right = total = 0
        for r, t in zip(rows, targets, strict=True):
            want = t.split()
            if len(want) != r["frames"]:
                raise ValueError(f"{r['input']}: {r['frames']} frames predicted, {len(want)} in the target")
            right += sum(a == b for a, b in zip(r["labels"], want, strict=True) if b != "-")
            total += sum(b != "-" for b in want)
        return {"frame_accuracy": right / max(total, 1), "frames": total}


__all__ = ["SpeechPredictor"]
