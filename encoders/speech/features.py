"""Kaldi filterbank / MFCC features (torchaudio.compliance.kaldi), 25 ms frames every 10 ms."""

from __future__ import annotations

import logging
from typing import Literal

from torch import Tensor, nn

from vecset.encoders.speech.framing import SAMPLE_RATE, num_frames

log = logging.getLogger(__name__)


# --- featurizer -----------------------------------------------------------------------------
class Featurizer(nn.Module):
    """Kaldi log-mel filterbank (or MFCC) frames of one waveform, 25 ms / 10 ms.

    Args:
        kind: ``fbank`` (log mel energies) or ``mfcc``.
        num_mel_bins: mel filters (40 or 80 are usual).
        num_ceps: cepstra kept for ``mfcc``.

    Shapes:
        wav (n,) float in [-1, 1] at 16 kHz -> (T, F) with T = 1 + (n - 400) // 160,
        F = num_mel_bins (fbank) or num_ceps (mfcc).
    """

    def __init__(self, kind: Literal["fbank", "mfcc"] = "fbank", num_mel_bins: int = 40, num_ceps: int = 13) -> None:
        super().__init__()
        if kind not in ("fbank", "mfcc"):
            raise ValueError(f"features must be 'fbank' or 'mfcc', got {kind!r}")
        self.kind, self.num_mel_bins, self.num_ceps = kind, num_mel_bins, num_ceps

    @property
    def dim(self) -> int:
        return self.num_mel_bins if self.kind == "fbank" else self.num_ceps

    def forward(self, wav: Tensor) -> Tensor:
        import torchaudio.compliance.kaldi as kaldi

        # Kaldi works on 16-bit sample values; dither 0 keeps features deterministic
        w = wav.float()[None] * 32768.0  # (1, n)
        common = dict(frame_length=25.0, frame_shift=10.0, sample_frequency=float(SAMPLE_RATE),
                      dither=0.0, num_mel_bins=self.num_mel_bins)
        if self.kind == "fbank":
            return kaldi.fbank(w, **common)  # (T, num_mel_bins)
        return kaldi.mfcc(w, num_ceps=self.num_ceps, **common)  # (T, num_ceps)


def featurize(featurizer: Featurizer, wav: Tensor, source: object) -> Tensor:
    """(n,) float waveform at 16 kHz -> (T, F) frames, T = num_frames(n) checked (``source``
    names the audio in the error)."""
    feats = featurizer(wav)  # (T, F)
    if feats.shape[0] != (T := num_frames(len(wav))):
        raise RuntimeError(f"{source}: fbank gave {feats.shape[0]} frames, expected {T}")
    return feats
