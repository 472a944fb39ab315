"""encoders/speech/augment.py: speed perturbation keeps the labels on the audio, noise lands at the drawn SNR."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from vecset.encoders.speech import Segment, frame_labels, num_frames
from vecset.encoders.speech.augment import WaveAugment

SR = 16000


def tone_between_silences(sr: int = SR) -> tuple[torch.Tensor, list[Segment]]:
    """0.5 s silence, 0.5 s of a 440 Hz tone, 0.5 s silence, at ``sr``; segments at ``sr``."""
    n = sr // 2
    t = torch.arange(n) / sr
    wav = torch.cat([torch.zeros(n), 0.5 * torch.sin(2 * math.pi * 440 * t), torch.zeros(n)])
    return wav, [Segment(0, n, "sil"), Segment(n, 2 * n, "tone"), Segment(2 * n, 3 * n, "sil")]


def loud_frames(wav: torch.Tensor) -> np.ndarray:
    T = num_frames(len(wav))
    frames = wav[: (T - 1) * 160 + 400].unfold(0, 400, 160)  # (T, 400)
    return (frames.pow(2).mean(1) > 0.05).numpy()  # the tone's power is 0.125


@pytest.mark.parametrize("factor", [0.9, 1.1])
def test_speed_perturbation_labels_follow_the_audio(factor):
    wav, segs = tone_between_silences()
    p = WaveAugment(speed_factors=[factor], snr_db=None)(wav, SR, torch.Generator().manual_seed(0))
    assert p.factor == factor and p.label_rate == round(SR * factor) and p.snr_db is None
    assert len(p.wav) == math.ceil(len(wav) / factor)
    # the tone's pitch moves by f: the spectral peak of the middle is at 440 f Hz
    mid = p.wav[len(p.wav) // 3 + 800: 2 * len(p.wav) // 3 - 800]
    peak = float(torch.fft.rfft(mid).abs().argmax()) * SR / len(mid)
    assert peak == pytest.approx(440 * factor, abs=SR / len(mid) + 1)
    y, ignored = frame_labels(segs, num_frames(len(p.wav)), ["sil", "tone"], sample_rate=p.label_rate)
    loud = loud_frames(p.wav)
    # every frame labelled "tone" by the unchanged .phn is inside the tone, and the reverse, except the
    # frames whose 25 ms window straddles a tone edge (partly loud)
    edges = np.flatnonzero(np.diff(loud.astype(int)))
    near = np.zeros(len(y), bool)
    for e in edges:
        near[max(0, e - 2): e + 3] = True
    assert ignored == 0 and ((y == 1) == loud)[~near].all() and near.sum() <= 10
    # without the rate change the labels would be off by (1 - 1/f) * 0.5 s = 4-5 frames at the far edge
    y_wrong, _ = frame_labels(segs, num_frames(len(p.wav)), ["sil", "tone"], sample_rate=SR)
    assert ((y_wrong == 1) != loud)[~near].sum() >= 3


def test_noise_is_added_at_the_drawn_snr_and_is_seeded():
    wav, _ = tone_between_silences()
    aug = WaveAugment(speed_factors=[1.0], snr_db=(5.0, 20.0), noise_prob=1.0)
    a = aug(wav, SR, torch.Generator().manual_seed(3))
    b = aug(wav, SR, torch.Generator().manual_seed(3))
    assert torch.equal(a.wav, b.wav) and 5.0 <= a.snr_db <= 20.0 and a.label_rate == SR
    noise = a.wav - wav
    snr = 10 * math.log10(float(wav.pow(2).mean()) / float(noise.pow(2).mean()))
    assert snr == pytest.approx(a.snr_db, abs=1e-3)  # torchaudio scales the noise to the exact SNR
    clean = WaveAugment(speed_factors=[1.0], snr_db=(5.0, 20.0), noise_prob=0.0)(wav, SR)
    assert torch.equal(clean.wav, wav) and clean.snr_db is None


def test_label_rate_of_a_file_at_another_rate():
    wav, _ = tone_between_silences()
    assert WaveAugment([0.9], None)(wav, 8000).label_rate == 7200
    with pytest.raises(ValueError, match="label rate 11025"):
        WaveAugment([0.9], None)(wav, 11025)


@pytest.mark.parametrize("kwargs, match", [
    ({"speed_factors": []}, "at least one factor"),
    ({"speed_factors": [0.0]}, "must be > 0"),
    ({"speed_factors": [1.00001]}, "whole number of Hz"),
    ({"snr_db": (20.0, 5.0)}, "low <= high"),
    ({"noise_prob": 1.5}, r"noise_prob must be in \[0, 1\]"),
    ({"speed_factors": [0.001]}, r"speed factor 0.001: must be > 0 and in \[0.5, 2.0\]"),
    ({"speed_factors": [float("nan")]}, r"speed factor nan: must be > 0 and in \[0.5, 2.0\]"),
    ({"snr_db": (float("nan"), 10.0)}, r"snr_db must be finite, in \[-20.0, 100.0\] dB"),
    ({"snr_db": (10.0, 200.0)}, r"snr_db must be finite, in \[-20.0, 100.0\] dB"),
])
def test_bad_settings_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WaveAugment(**kwargs)
