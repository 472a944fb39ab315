"""A long recording read and featurized in blocks of frames, in constant memory.

Kaldi framing with ``snip_edges`` cuts frame t from samples [t*S, t*S + L) and featurizes
every frame on its own (its own DC offset, pre-emphasis and window), so the frames of a range
[first, last) computed from samples [first*S, (last-1)*S + L) equal the whole file's (a test
holds them equal). Per-recording ("utterance") normalization needs the whole recording's
per-bin mean and deviation: ``recording_stats`` gets them in one streaming pass.

Only 16 kHz files in a format whose reading starts exactly at any sample (PCM, FLAC, ...) are
read in blocks: another rate is resampled whole (``read_audio``), and MP3 and Ogg (decoders whose
seeking is not promised sample-exact) are decoded whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from vecset.encoders.speech.audio import check_wav_complete
from vecset.encoders.speech.features import Featurizer
from vecset.encoders.speech.framing import FRAME_LENGTH, FRAME_SHIFT, SAMPLE_RATE, num_frames


@dataclass(frozen=True)
class Recording:
    """What a file's header says: its rate, length (samples per channel) and frame count at 16 kHz."""

    path: Path
    file_rate: int
    file_samples: int
    format: str  # soundfile's name: WAV, FLAC, MP3, ...

    @property
    def streamable(self) -> bool:
        """Read in blocks only at 16 kHz (resampling in blocks would not equal resampling whole)
        and not from MP3 or Ogg (lossy decoders' seeking)."""
        return self.file_rate == SAMPLE_RATE and self.format not in ("MP3", "OGG")

    @property
    def frames(self) -> int:
        return num_frames(self.file_samples)


def recording_info(path: str | Path) -> Recording:
    """The header of an audio file (soundfile); unreadable or truncated files are a ValueError naming it."""
    import soundfile as sf

    path = Path(path)
    try:
        check_wav_complete(path)
        info = sf.info(str(path))
    except Exception as e:  # noqa: BLE001 - name the file
        raise ValueError(f"{path}: unreadable or truncated audio file ({e})") from None
    return Recording(path, int(info.samplerate), int(info.frames), str(info.format))


def read_frames(rec: Recording, first: int, last: int, featurizer: Featurizer) -> Tensor:
    """Features of frames [first, last) of a 16 kHz recording, read from its samples
    [first*S, (last-1)*S + L) only.

    Shapes: -> (last - first, F)
    """
    import soundfile as sf

    if not rec.streamable:
        raise ValueError(f"{rec.path}: {rec.format} at {rec.file_rate} Hz; only 16 kHz files, not MP3 or Ogg, "
                         "are read in blocks")
    if not 0 <= first < last <= rec.frames:
        raise ValueError(f"{rec.path}: frames [{first}, {last}) outside its {rec.frames} frames")
    a, b = first * FRAME_SHIFT, (last - 1) * FRAME_SHIFT + FRAME_LENGTH
    with sf.SoundFile(str(rec.path)) as f:
        f.seek(a)
        wav = f.read(b - a, dtype="float32", always_2d=True)  # (n, C)
    if len(wav) != b - a:
        raise ValueError(f"{rec.path}: read {len(wav)} samples from {a}, the header promised {b - a}")
    mono = wav.mean(axis=1) if wav.shape[1] > 1 else wav[:, 0]  # as read_audio mixes stereo
    feats = featurizer(torch.from_numpy(np.ascontiguousarray(mono, dtype=np.float32)))  # (last - first, F)
    if feats.shape[0] != last - first:
        raise RuntimeError(f"{rec.path}: fbank gave {feats.shape[0]} frames for [{first}, {last})")
    return feats


def recording_stats(rec: Recording, featurizer: Featurizer, block_frames: int) -> tuple[Tensor, Tensor]:
    """Per-bin mean and deviation over every frame of the recording, in one pass of
    ``block_frames`` frames at a time (sums in float64): what ``SpeechEncoder``'s
    ``utterance`` normalization computes over the whole file. Kept in float64 (the encoder
    casts them to its own precision).

    Shapes: -> mean (F,), std (F,) float64
    """
    s1 = s2 = None
    for first in range(0, rec.frames, block_frames):
        x = read_frames(rec, first, min(rec.frames, first + block_frames), featurizer).double()  # (n, F)
        s1 = x.sum(0) if s1 is None else s1 + x.sum(0)
        s2 = x.pow(2).sum(0) if s2 is None else s2 + x.pow(2).sum(0)
    n = rec.frames
    mean = s1 / n
    var = (s2 / n - mean.pow(2)).clamp_min(1e-10)  # the encoder's floor
    return mean, var.sqrt()


def frames_stats(x: Tensor) -> tuple[Tensor, Tensor]:
    """The same statistics of frames already in memory. Shapes: x (T, F) -> mean (F,), std (F,) float64"""
    x = x.double()
    mean = x.mean(0)
    var = (x - mean).pow(2).mean(0).clamp_min(1e-10)
    return mean, var.sqrt()
