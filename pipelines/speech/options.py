"""SpeechFramesDataModule's option groups (config sections under ``data.init_args``), and the
values its config links to the model (``model_links``).

The alignment group is the reader's own ``AlignmentSource`` (``encoders/speech``: ``format``,
``phone_tier``, ``word_tier``, ``phone_ctm``, ``word_ctm``), the device group the shared
``BucketedPlacement`` (``data/options.py``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

from vecset.encoders.speech import Featurizer
from vecset.encoders.speech.phones import phone_names


@dataclass(frozen=True)
class SpeechSplits:
    """Which utterances each split holds.

    Args:
        train, val, test: each split as a list file of utterance paths relative to ``root``
            (``train.lst``...) or a folder under ``root`` (real TIMIT: ``TRAIN``, ``TEST``).
        max_utterances: keep only the first n utterances of each split (quick runs; 0 = all).
        fit_max_frames: if > 0, training and validation utterances longer than this many frames
            (10 ms each) are cut to their first ``fit_max_frames`` frames, labels with them (their
            segments and words, which only the test reports read, stay whole); counted and
            logged. The test split keeps its full lengths (a length-generalization study).
    """

    train: str = "train.lst"
    val: str = "dev.lst"
    test: str = "test.lst"
    max_utterances: int = 0
    fit_max_frames: int = 0

    def __post_init__(self) -> None:
        if self.fit_max_frames < 0:
            raise ValueError(f"fit_max_frames must be >= 0 (0: full lengths), got {self.fit_max_frames}")


@dataclass(frozen=True)
class SpeechFeatures:
    """The frames' features (``encoders/speech/features.py``: Kaldi's, 25 ms every 10 ms).

    Args:
        kind: ``fbank`` (log mel energies) or ``mfcc``.
        num_mel_bins: mel filters (40 or 80 are usual).
        num_ceps: cepstra kept for ``mfcc``.
    """

    kind: Literal["fbank", "mfcc"] = "fbank"
    num_mel_bins: int = 40
    num_ceps: int = 13

    def featurizer(self) -> Featurizer:
        return Featurizer(self.kind, self.num_mel_bins, self.num_ceps)


@dataclass(frozen=True)
class SpeechAugment:
    """Training-time waveform augmentation; validation and test are never augmented. With any of
    it set, the training waveforms are kept (int16) and each training item is perturbed,
    featurized and labelled when drawn (``utterances.py``); the normalization statistics still
    come from the plain training frames. SpecAugment (masking) is the encoder's, or
    ``batch_augment``'s.

    Args:
        speed_factors: speed perturbation, a factor drawn per utterance and epoch from this list
            (e.g. [0.9, 1.0, 1.1]; each in [0.5, 2.0], ``16000 * f`` a whole number of Hz).
        noise_snr_db: white noise at an SNR drawn uniformly from [low, high] dB (finite, in
            [-20, 100]) on a ``noise_prob`` share of the draws.
        noise_prob: the share of draws that get noise.
        voice: voice and channel transforms that keep every sample in place
            (``encoders/speech/voice_augment.py``), by name with their probability ``p`` and
            ranges, e.g. ``{vtlp: {p: 0.5, alpha: [0.9, 1.1]}, pitch: {p: 0.3, semitones: [-3, 3]},
            telephone: {p: 0.2}}``; applied before speed and noise.
        seed: with (epoch, index), seeds each draw.
    """

    speed_factors: list[float] | None = None
    noise_snr_db: list[float] | None = None
    noise_prob: float = 0.5
    voice: dict[str, dict] | None = None
    seed: int = 0

    @property
    def on(self) -> bool:
        return self.speed_factors is not None or self.noise_snr_db is not None or self.voice is not None


@dataclass(frozen=True)
class SpeechPredict:
    """What ``vecset predict`` reads and writes.

    Args:
        paths: audio files or folders (no .phn needed); default: the test split.
        chunk_frames: each file is read, featurized and run in chunks of this many frames (2000:
            20 s) with the model's receptive field as context on each side, so memory does not
            grow with the file's length and the output equals the whole file's (docs/speech.md);
            0 reads each file whole.
        segments: what the ``.phn`` files hold: ``decoder``, the head's segment decoder's segments
            (the argmax runs when the head has none), or ``argmax``, the runs of the per-frame
            argmax labels merged.
    """

    paths: list[str] | None = None
    chunk_frames: int = 2000
    segments: Literal["decoder", "argmax"] = "decoder"

    def __post_init__(self) -> None:
        if self.chunk_frames < 0:
            raise ValueError(f"predict.chunk_frames must be >= 0 (0: whole files), got {self.chunk_frames}")
        if self.segments not in ("decoder", "argmax"):
            raise ValueError(f"predict.segments must be 'decoder' or 'argmax', got {self.segments!r}")


def feature_count(kind: str, num_mel_bins: int, num_ceps: int) -> tuple[int, str, str]:
    """The featurizer's width (``Featurizer.dim``), linked to the encoder's ``in_dim``."""
    if kind == "mfcc":
        return num_ceps, "features.num_ceps", f"{num_ceps} (features.kind: mfcc)"
    return num_mel_bins, "features.num_mel_bins", str(num_mel_bins)


@functools.cache
def phone_count(phone_set: str) -> tuple[int, str, str]:
    """The phone set's label count (asked once per phone set: the link applies at every parse)."""
    n = len(phone_names(phone_set))
    return n, "phone_set", f"{phone_set} ({n} labels)"


__all__ = ["SpeechAugment", "SpeechFeatures", "SpeechPredict", "SpeechSplits", "feature_count", "phone_count"]
