"""Training-time waveform augmentation: speed perturbation and additive noise at a sampled SNR (torchaudio).

Speed perturbation (Ko et al. 2015, "Audio augmentation for speech recognition": factors 0.9,
1.0, 1.1) reads the 16 kHz waveform as if it had been recorded at 16000*f Hz and resamples it to
16 kHz (``torchaudio.functional.resample``): tempo, pitch and formants all scale by f. The phone
segments need no rewriting: a .phn counting samples at rate r labels the perturbed waveform
exactly when read at rate r*f (``frame_labels(..., sample_rate=label_rate)``), the same integer
arithmetic as any other file rate. Noise: white Gaussian noise added at an SNR drawn uniformly
in dB (``torchaudio.functional.add_noise``; the signal power is the whole utterance's).

Ranges (checked at construction): speed factors in [0.5, 2.0], beyond the 0.8-1.2 of published
recipes (Ko et al. 2015: 0.9-1.1) yet short of a waveform 1000x longer from a typo; SNR finite,
in [-20, 100] dB: from noise 100x the speech's power to noise below 16-bit audio's ~96 dB range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from vecset.encoders.speech.framing import SAMPLE_RATE

SPEED_RANGE = (0.5, 2.0)
SNR_RANGE_DB = (-20.0, 100.0)


def snr_in_range(snr_db) -> bool:
    """(low, high) with both finite, inside ``SNR_RANGE_DB``, low <= high."""
    lo, hi = SNR_RANGE_DB
    return all(math.isfinite(v) and lo <= v <= hi for v in snr_db)


@dataclass
class Perturbed:
    """One augmented waveform: ``wav`` (n',) at 16 kHz; ``label_rate``: the rate at which the
    original .phn's sample numbers label it; ``factor`` and ``snr_db`` (None: no noise) drawn."""

    wav: Tensor
    label_rate: int
    factor: float
    snr_db: float | None


class WaveAugment:
    """Speed perturbation and additive noise for one training utterance, drawn from a generator.

    Args:
        speed_factors: the speed factors f to choose from uniformly (f > 1: faster, shorter);
            each in ``SPEED_RANGE`` and ``16000 * f`` a whole number of Hz. ``[1.0]``: no speed
            perturbation.
        snr_db: (low, high) range of the SNR in dB, drawn uniformly, finite and inside
            ``SNR_RANGE_DB``; None: no noise.
        noise_prob: probability that an utterance gets noise (when ``snr_db`` is set).

    Shapes:
        wav (n,) float at 16 kHz -> Perturbed.wav (ceil(n / f),) float at 16 kHz.
    """

    def __init__(self, speed_factors: list[float] | tuple[float, ...] = (0.9, 1.0, 1.1),
                 snr_db: tuple[float, float] | None = (10.0, 40.0), noise_prob: float = 0.5) -> None:
        if not speed_factors:
            raise ValueError("speed_factors: give at least one factor ([1.0] for none)")
        for f in speed_factors:
            if not SPEED_RANGE[0] <= f <= SPEED_RANGE[1]:  # NaN too
                raise ValueError(f"speed factor {f}: must be > 0 and in [{SPEED_RANGE[0]}, {SPEED_RANGE[1]}]")
            if abs(f * SAMPLE_RATE - round(f * SAMPLE_RATE)) > 1e-6:
                raise ValueError(f"speed factor {f}: must be > 0 with 16000 * f a whole number of Hz")
        if snr_db is not None and (len(snr_db) != 2 or snr_db[0] > snr_db[1]):
            raise ValueError(f"snr_db must be (low, high) with low <= high, got {snr_db}")
        if snr_db is not None and not snr_in_range(snr_db):
            raise ValueError(f"snr_db must be finite, in [{SNR_RANGE_DB[0]}, {SNR_RANGE_DB[1]}] dB, got {snr_db}")
        if not 0.0 <= noise_prob <= 1.0:
            raise ValueError(f"noise_prob must be in [0, 1], got {noise_prob}")
        self.speed_factors, self.snr_db, self.noise_prob = list(speed_factors), snr_db, noise_prob

    def __call__(self, wav: Tensor, file_rate: int = SAMPLE_RATE, generator: torch.Generator | None = None) -> Perturbed:
        """``wav`` (n,) at 16 kHz, read from a file at ``file_rate`` Hz (its .phn counts samples
        at that rate)."""
        import torchaudio.functional as AF

        f = self.speed_factors[int(torch.randint(len(self.speed_factors), (1,), generator=generator))]
        src = round(f * SAMPLE_RATE)
        if (file_rate * src) % SAMPLE_RATE:
            raise ValueError(f"speed factor {f} on a {file_rate} Hz file: the label rate {file_rate} * {f} "
                             "is not a whole number of Hz")
        label_rate = file_rate * src // SAMPLE_RATE
        out = wav if src == SAMPLE_RATE else AF.resample(wav[None].float(), src, SAMPLE_RATE)[0]
        snr = None
        if self.snr_db is not None and float(torch.rand((), generator=generator)) < self.noise_prob:
            lo, hi = self.snr_db
            snr = lo + (hi - lo) * float(torch.rand((), generator=generator))
            noise = torch.randn(out.shape, generator=generator, dtype=out.dtype)
            out = AF.add_noise(out[None], noise[None], torch.tensor([snr], dtype=out.dtype))[0]
        return Perturbed(wav=out, label_rate=label_rate, factor=f, snr_db=snr)
