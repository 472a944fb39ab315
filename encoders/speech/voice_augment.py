"""Speaker and channel augmentation that keeps every sample in place: labels stay exact.

Each transform maps a 16 kHz waveform (n,) to another of the same length n with no delay, so the
.phn boundaries (and so every frame label, ``frame_labels``) are those of the input. Published
recipes for crossing a speaker or channel gap:

- ``VocalTractLength``: vocal tract length perturbation (Jaitly & Hinton 2013, "Vocal Tract
  Length Perturbation (VTLP) improves speech recognition"): the spectrum's frequency axis warped
  by a factor alpha in [0.9, 1.1], piecewise linear with the bend at 4.8 kHz of 8 kHz (their
  recipe); here on the STFT of the waveform (``torch.stft`` / ``torch.istft`` with ``length=n``),
  magnitudes and phases interpolated between bins.
- ``PitchShift``: pitch moved by n semitones with duration kept
  (``torchaudio.functional.pitch_shift``: phase-vocoder stretch, then resampling; its output has
  the input's length).
- ``RoomReverb``: convolution with a simulated room impulse response: a direct-path impulse at
  t = 0 plus exponentially decaying Gaussian noise with the drawn RT60 (time for 60 dB decay), the
  statistical model of late reverberation (Polack 1988; Ko et al. 2017 "A study on data
  augmentation of reverberant speech" use simulated RIRs); ``torchaudio.functional.fftconvolve``,
  cut to the first n samples (a causal filter with its main peak at 0: no shift).
- ``Telephone``: narrowband channel: band-pass 300-3400 Hz (two biquads,
  ``torchaudio.functional.highpass_biquad`` / ``lowpass_biquad``), optionally 8-bit mu-law
  companding (``mu_law_encoding`` / ``mu_law_decoding``, G.711's curve).
- ``ColouredNoise``: additive noise at an SNR drawn in dB (``torchaudio.functional.add_noise``),
  white, pink (1/f) or brown (1/f^2) spectrum.

``VoiceAugment`` draws each transform with its probability and its parameters from a
``torch.Generator``, in a fixed order (warp, pitch, reverb, channel, noise);
``VoiceAugment.from_config`` builds one from the data module's ``voice_augment`` setting (the
transforms by name, ``TRANSFORMS``; those not named are off).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from vecset.encoders.speech.framing import SAMPLE_RATE


def _uniform(lo: float, hi: float, generator: torch.Generator | None) -> float:
    return lo + (hi - lo) * float(torch.rand((), generator=generator))


class VocalTractLength:
    """Warp the frequency axis by ``alpha`` (>1 moves formants up: a shorter vocal tract).

    Args:
        alpha: warp factor, in [0.8, 1.2].
        f_hi: the bend of the piecewise-linear warp in Hz (Jaitly & Hinton: 4800 of 8000).
        n_fft, hop: STFT size and hop in samples (Hann window).
    """

    def __init__(self, alpha: float, f_hi: float = 4800.0, n_fft: int = 512, hop: int = 128) -> None:
        if not 0.8 <= alpha <= 1.2:
            raise ValueError(f"alpha must be in [0.8, 1.2], got {alpha}")
        self.alpha, self.f_hi, self.n_fft, self.hop = alpha, f_hi, n_fft, hop

    def source_bins(self, bins: int) -> Tensor:
        """For each output bin, the (fractional) input bin it reads: the inverse of the warp
        f -> alpha f below f_hi * min(alpha, 1) / alpha, linear up to Nyquist above."""
        nyq = SAMPLE_RATE / 2
        f = torch.linspace(0, nyq, bins, dtype=torch.float64)
        b = self.f_hi * min(self.alpha, 1.0) / self.alpha  # the input frequency of the bend
        wb = self.alpha * b  # where the bend lands
        src = torch.where(f <= wb, f / self.alpha, b + (f - wb) * (nyq - b) / (nyq - wb))
        return (src / nyq * (bins - 1)).clamp(0, bins - 1)

    def __call__(self, wav: Tensor) -> Tensor:
        n = wav.shape[-1]
        win = torch.hann_window(self.n_fft, dtype=wav.dtype)
        spec = torch.stft(wav, self.n_fft, self.hop, window=win, return_complex=True)  # (F, T)
        src = self.source_bins(spec.shape[0])
        lo = src.floor().long()
        hi = (lo + 1).clamp(max=spec.shape[0] - 1)
        w = (src - lo).to(wav.dtype)[:, None]
        mag = spec.abs()
        m = (1 - w) * mag[lo] + w * mag[hi]
        phase = torch.where(w < 0.5, spec[lo].angle(), spec[hi].angle())
        out = torch.istft(torch.polar(m, phase), self.n_fft, self.hop, window=win, length=n)
        return out


class PitchShift:
    """Pitch moved by ``semitones`` (in [-6, 6]), duration kept: the waveform read as if
    recorded at 16000 k Hz (k = 2^(semitones/12), rounded to 50 Hz so that the resampling kernel
    stays small; torchaudio's ``pitch_shift`` resamples from an arbitrary rate, 90 s for one
    second of audio here) and resampled to 16 kHz (pitch x k, length / k), then stretched back
    to the input's length by the phase vocoder (``torchaudio.functional.phase_vocoder``)."""

    def __init__(self, semitones: float, n_fft: int = 512, hop: int = 128) -> None:
        if not -6 <= semitones <= 6:
            raise ValueError(f"semitones must be in [-6, 6], got {semitones}")
        self.semitones, self.n_fft, self.hop = semitones, n_fft, hop
        self.source_rate = int(round(SAMPLE_RATE * 2 ** (semitones / 12) / 50) * 50)

    def __call__(self, wav: Tensor) -> Tensor:
        import torchaudio.functional as AF

        n = wav.shape[-1]
        short = AF.resample(wav[None], self.source_rate, SAMPLE_RATE)[0] if self.source_rate != SAMPLE_RATE else wav
        win = torch.hann_window(self.n_fft, dtype=wav.dtype)
        spec = torch.stft(short, self.n_fft, self.hop, window=win, return_complex=True)
        advance = torch.linspace(0, math.pi * self.hop, spec.shape[0], dtype=wav.dtype)[:, None]
        stretched = AF.phase_vocoder(spec, len(short) / n, advance)
        return torch.istft(stretched, self.n_fft, self.hop, window=win, length=n)


def room_impulse_response(rt60: float, generator: torch.Generator | None = None, direct: float = 1.0,
                          sample_rate: int = SAMPLE_RATE) -> Tensor:
    """A simulated RIR: 1 at t = 0 (direct path) plus Gaussian noise whose envelope decays by
    60 dB in ``rt60`` seconds, starting 1 ms later; ``direct``: the direct-to-reverberant energy
    ratio (linear; 1: the tail carries as much energy as the direct path)."""
    length = max(2, int(rt60 * sample_rate))
    t = torch.arange(length, dtype=torch.float32) / sample_rate
    tail = torch.randn(length, generator=generator) * torch.exp(-6.9078 * t / rt60)  # ln(1000) = 6.9078: -60 dB
    tail[: sample_rate // 1000] = 0.0
    tail = tail / tail.norm().clamp_min(1e-12) / math.sqrt(direct)
    tail[0] = 1.0
    return tail


class RoomReverb:
    """Convolution with ``room_impulse_response(rt60)``, cut to the input's length; the output
    rescaled to the input's peak."""

    def __init__(self, rt60: float, direct: float = 1.0, generator: torch.Generator | None = None) -> None:
        if not 0.05 <= rt60 <= 2.0:
            raise ValueError(f"rt60 must be in [0.05, 2.0] s, got {rt60}")
        self.rir = room_impulse_response(rt60, generator, direct)

    def __call__(self, wav: Tensor) -> Tensor:
        import torchaudio.functional as AF

        out = AF.fftconvolve(wav, self.rir.to(wav.dtype))[: wav.shape[-1]]
        return out * (wav.abs().max() / out.abs().max().clamp_min(1e-12))


class Telephone:
    """Band-pass ``low``-``high`` Hz (second-order high- and low-pass biquads), then optionally
    8-bit mu-law companding."""

    def __init__(self, low: float = 300.0, high: float = 3400.0, mu_law: bool = True) -> None:
        if not 0 < low < high < SAMPLE_RATE / 2:
            raise ValueError(f"need 0 < low < high < {SAMPLE_RATE // 2} Hz, got {low}, {high}")
        self.low, self.high, self.mu_law = low, high, mu_law

    def __call__(self, wav: Tensor) -> Tensor:
        import torchaudio.functional as AF

        out = AF.highpass_biquad(wav, SAMPLE_RATE, self.low)
        out = AF.lowpass_biquad(out, SAMPLE_RATE, self.high)
        out = AF.highpass_biquad(out, SAMPLE_RATE, self.low)
        out = AF.lowpass_biquad(out, SAMPLE_RATE, self.high)
        if self.mu_law:
            peak = out.abs().max().clamp_min(1e-12)
            out = AF.mu_law_decoding(AF.mu_law_encoding(out / peak, 256), 256) * peak
        return out


def coloured_noise(n: int, colour: str, generator: torch.Generator | None = None) -> Tensor:
    """Gaussian noise with a power spectrum of 1/f^k: white (k 0), pink (1), brown (2)."""
    k = {"white": 0.0, "pink": 1.0, "brown": 2.0}.get(colour)
    if k is None:
        raise ValueError(f"colour must be white, pink or brown, got {colour!r}")
    x = torch.randn(n, generator=generator)
    if k == 0:
        return x
    spec = torch.fft.rfft(x)
    f = torch.arange(spec.shape[0], dtype=torch.float32).clamp_min(1.0)
    return torch.fft.irfft(spec / f ** (k / 2), n=n)


class ColouredNoise:
    """Noise of ``colour`` added at ``snr_db`` (the whole utterance's power)."""

    def __init__(self, snr_db: float, colour: str = "white", generator: torch.Generator | None = None) -> None:
        if not (math.isfinite(snr_db) and -20 <= snr_db <= 100):
            raise ValueError(f"snr_db must be finite, in [-20, 100], got {snr_db}")
        self.snr_db, self.colour, self.generator = snr_db, colour, generator

    def __call__(self, wav: Tensor) -> Tensor:
        import torchaudio.functional as AF

        noise = coloured_noise(wav.shape[-1], self.colour, self.generator).to(wav.dtype)
        return AF.add_noise(wav[None], noise[None], torch.tensor([self.snr_db], dtype=wav.dtype))[0]


# config name -> (VoiceAugment's probability field, its range settings: name -> (field, bounds))
TRANSFORMS: dict[str, tuple[str, dict[str, tuple[str, tuple[float, float] | None]]]] = {
    "vtlp": ("p_warp", {"alpha": ("alpha", (0.8, 1.2))}),
    "pitch": ("p_pitch", {"semitones": ("semitones", (-6.0, 6.0))}),
    "reverb": ("p_reverb", {"rt60": ("rt60", (0.05, 2.0))}),
    "telephone": ("p_telephone", {}),
    "noise": ("p_noise", {"snr_db": ("snr_db", (-20.0, 100.0)), "colours": ("colours", None)}),
}


@dataclass
class VoiceAugment:
    """Draws and applies the transforms above to one utterance (each with its probability).

    Args:
        p_warp, alpha: VTLP probability and alpha range.
        p_pitch, semitones: pitch-shift probability and range.
        p_reverb, rt60: reverberation probability and RT60 range in seconds.
        p_telephone: probability of the telephone channel.
        p_noise, snr_db, colours: noise probability, SNR range in dB and the colours drawn from.
    """

    p_warp: float = 0.5
    alpha: tuple[float, float] = (0.9, 1.1)
    p_pitch: float = 0.3
    semitones: tuple[float, float] = (-3.0, 3.0)
    p_reverb: float = 0.3
    rt60: tuple[float, float] = (0.2, 0.8)
    p_telephone: float = 0.2
    p_noise: float = 0.5
    snr_db: tuple[float, float] = (5.0, 30.0)
    colours: tuple[str, ...] = field(default=("white", "pink", "brown"))

    def __post_init__(self) -> None:
        for name, (p_field, settings) in TRANSFORMS.items():
            p = getattr(self, p_field)
            if not 0.0 <= p <= 1.0:  # NaN too
                raise ValueError(f"{name}: probability p must be in [0, 1], got {p}")
            for key, (f, bounds) in settings.items():
                v = getattr(self, f)
                if bounds is None:
                    bad = [c for c in v if c not in ("white", "pink", "brown")] if v else ["(none)"]
                    if bad:
                        raise ValueError(f"{name}: {key} must be a non-empty list of white, pink, brown; got {list(v)}")
                    continue
                if len(v) != 2 or not (bounds[0] <= v[0] <= v[1] <= bounds[1]):
                    raise ValueError(f"{name}: {key} must be [low, high] with {bounds[0]} <= low <= high <= "
                                     f"{bounds[1]}, got {list(v)}")

    @classmethod
    def from_config(cls, transforms: dict[str, dict]) -> VoiceAugment:
        """From ``{name: {"p": probability, <range setting>: [low, high], ...}}`` with names from
        ``TRANSFORMS`` (vtlp: alpha; pitch: semitones; reverb: rt60; telephone; noise: snr_db,
        colours); an omitted setting keeps this class's default, a transform not named is off."""
        if not transforms:
            raise ValueError(f"voice_augment: name at least one transform ({', '.join(TRANSFORMS)}), or leave it unset")
        kw: dict = {p_field: 0.0 for p_field, _ in TRANSFORMS.values()}
        for name, settings in transforms.items():
            if name not in TRANSFORMS:
                raise ValueError(f"voice_augment: unknown transform {name!r}; known: {', '.join(TRANSFORMS)}")
            p_field, ranges = TRANSFORMS[name]
            settings = dict(settings or {})
            unknown = sorted(set(settings) - {"p", *ranges})
            if unknown:
                raise ValueError(f"voice_augment: {name}: unknown setting {', '.join(map(repr, unknown))}; "
                                 f"known: {', '.join(['p', *ranges])}")
            kw[p_field] = cls.__dataclass_fields__[p_field].default if "p" not in settings else float(settings["p"])
            for key, value in settings.items():
                if key != "p":
                    kw[ranges[key][0]] = tuple(value)
        return cls(**kw)

    def describe(self) -> str:
        """The transforms that are on, with their probabilities and ranges (one line, for the log)."""
        on = []
        for name, (p_field, ranges) in TRANSFORMS.items():
            if getattr(self, p_field) > 0:
                extra = "".join(f" {k} {list(getattr(self, f))}" for k, (f, _) in ranges.items())
                on.append(f"{name} p={getattr(self, p_field):g}{extra}")
        return "; ".join(on) or "none"

    def __call__(self, wav: Tensor, generator: torch.Generator | None = None) -> tuple[Tensor, list[str]]:
        """(augmented waveform of the same length, the transforms applied with their parameters)."""
        g, done = generator, []

        def draw(p: float) -> bool:
            return float(torch.rand((), generator=g)) < p

        if draw(self.p_warp):
            a = _uniform(*self.alpha, g)
            wav, _ = VocalTractLength(a)(wav), done.append(f"vtlp {a:.3f}")
        if draw(self.p_pitch):
            s = _uniform(*self.semitones, g)
            wav, _ = PitchShift(s)(wav), done.append(f"pitch {s:+.2f} st")
        if draw(self.p_reverb):
            r = _uniform(*self.rt60, g)
            wav, _ = RoomReverb(r, generator=g)(wav), done.append(f"reverb rt60 {r:.2f} s")
        if draw(self.p_telephone):
            wav, _ = Telephone()(wav), done.append("telephone")
        if draw(self.p_noise):
            snr = _uniform(*self.snr_db, g)
            c = self.colours[int(torch.randint(len(self.colours), (1,), generator=g))]
            wav, _ = ColouredNoise(snr, c, g)(wav), done.append(f"{c} noise {snr:.1f} dB")
        return wav, done
