"""encoders/speech/voice_augment.py: every transform keeps the length, so the frames and their
labels are the input's, and each does what it says (a tone's pitch, a band's energy, an SNR)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from vecset.encoders.speech import FESTIVAL_PHONES, frame_labels, num_frames, read_phn
from vecset.encoders.speech.voice_augment import (
    ColouredNoise,
    PitchShift,
    RoomReverb,
    Telephone,
    VocalTractLength,
    VoiceAugment,
    coloured_noise,
    room_impulse_response,
)

SR = 16000
SAMPLE = Path(__file__).resolve().parents[2] / "data" / "speech"


@pytest.fixture(scope="module")
def utterance():
    path = min(sorted((SAMPLE / "s09kal").glob("*.flac")), key=lambda f: sf.info(f).frames)  # the shortest
    wav, sr = sf.read(path, dtype="float32")
    segs = read_phn(path.with_suffix(".phn"), len(wav), list(FESTIVAL_PHONES))
    return torch.from_numpy(wav), segs


def tone(hz: float, seconds: float = 1.0) -> torch.Tensor:
    t = torch.arange(int(SR * seconds)) / SR
    return 0.5 * torch.sin(2 * torch.pi * hz * t)


def peak_hz(x: torch.Tensor) -> float:
    spec = torch.fft.rfft(x * torch.hann_window(len(x))).abs()
    return float(spec.argmax()) * SR / len(x)


def band_power(x: torch.Tensor, lo: float, hi: float) -> float:
    spec = torch.fft.rfft(x).abs() ** 2
    f = torch.fft.rfftfreq(len(x), 1 / SR)
    return float(spec[(f >= lo) & (f < hi)].mean())


TRANSFORMS = {
    "vtlp": lambda: VocalTractLength(1.1),
    "pitch": lambda: PitchShift(3.0),
    "reverb": lambda: RoomReverb(0.5, generator=torch.Generator().manual_seed(0)),
    "telephone": lambda: Telephone(),
    "noise": lambda: ColouredNoise(10.0, "pink", torch.Generator().manual_seed(0)),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_frames_and_labels_unchanged(name, utterance):
    wav, segs = utterance
    out = TRANSFORMS[name]()(wav)
    assert out.shape == wav.shape and out.dtype == wav.dtype and torch.isfinite(out).all()
    assert not torch.allclose(out, wav, atol=1e-3)  # it did something
    nf = num_frames(len(wav))
    want, _ = frame_labels(segs, nf, list(FESTIVAL_PHONES))
    got, _ = frame_labels(segs, num_frames(len(out)), list(FESTIVAL_PHONES))
    assert np.array_equal(want, got)


def test_vtlp_identity_at_one_and_moves_a_tone_by_alpha():
    x = tone(1000.0)
    assert torch.allclose(VocalTractLength(1.0)(x), x, atol=1e-3)
    assert abs(peak_hz(VocalTractLength(1.1)(x)) - 1100) < 40
    assert abs(peak_hz(VocalTractLength(0.9)(x)) - 900) < 40
    with pytest.raises(ValueError, match=r"alpha must be in \[0.8, 1.2\]"):
        VocalTractLength(1.5)


def test_pitch_shift_keeps_duration_and_scales_a_tone():
    x = tone(440.0)
    out = PitchShift(12.0 / 2)(x)  # half an octave: x sqrt(2)
    assert out.shape == x.shape
    assert abs(peak_hz(out) / 440.0 - 2 ** 0.5) < 0.03  # source rate 22650 Hz: k = 1.4156


def test_reverb_rir_decays_and_starts_with_the_direct_path():
    rir = room_impulse_response(0.6, torch.Generator().manual_seed(1))
    assert rir[0] == 1.0 and len(rir) == int(0.6 * SR)
    tenth = len(rir) // 10
    assert rir[1:tenth].pow(2).sum() > 100 * rir[-tenth:].pow(2).sum()  # -60 dB over rt60
    # no delay: an impulse's response peaks where the impulse is
    x = torch.zeros(8000)
    x[1000] = 1.0
    assert int(RoomReverb(0.3, generator=torch.Generator().manual_seed(0))(x).abs().argmax()) == 1000


def test_telephone_removes_the_upper_band():
    x = coloured_noise(SR, "white", torch.Generator().manual_seed(0))
    out = Telephone(mu_law=False)(x)
    assert band_power(out, 5000, 8000) < 0.01 * band_power(x, 5000, 8000)
    assert band_power(out, 500, 2000) > 0.3 * band_power(x, 500, 2000)
    assert torch.isfinite(Telephone()(x)).all()


@pytest.mark.parametrize("colour", ["white", "pink", "brown"])
def test_noise_at_the_snr(colour):
    x = tone(300.0)
    out = ColouredNoise(10.0, colour, torch.Generator().manual_seed(0))(x)
    snr = 10 * torch.log10(x.pow(2).sum() / (out - x).pow(2).sum())
    assert abs(float(snr) - 10.0) < 0.05
    n = coloured_noise(SR, colour, torch.Generator().manual_seed(2))
    ratio = band_power(n, 50, 500) / band_power(n, 4000, 8000)
    assert (0.5 < ratio < 2) if colour == "white" else ratio > 5


def test_voice_augment_is_seeded_and_applies_each_transform(utterance):
    wav, _ = utterance
    aug = VoiceAugment(p_warp=1, p_pitch=1, p_reverb=1, p_telephone=1, p_noise=1)
    a, done = aug(wav, torch.Generator().manual_seed(3))
    b, _ = aug(wav, torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and a.shape == wav.shape
    assert [d.split()[0] for d in done] == ["vtlp", "pitch", "reverb", "telephone", done[4].split()[0]]
    none = VoiceAugment(p_warp=0, p_pitch=0, p_reverb=0, p_telephone=0, p_noise=0)
    assert none(wav)[1] == [] and torch.equal(none(wav)[0], wav)
