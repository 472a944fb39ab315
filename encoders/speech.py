"""Speech frames: TIMIT-layout readers, Kaldi filterbank features, frame labels, SpeechEncoder.

Features: ``torchaudio.compliance.kaldi.fbank`` (or ``.mfcc``) with 25 ms frames and a 10 ms
shift (Povey et al. 2011, the Kaldi toolkit). Masking in training: SpecAugment (Park et al.
2019) with ``torchaudio.transforms.FrequencyMasking`` / ``TimeMasking``. Phone sets: TIMIT's
61 phones and the 39-class folding of Lee & Hon 1989 ("Speaker-independent phone recognition
using hidden Markov models"); Festival's radio phone set plus ``h#``.

Frame-label rule (the frame-centre rule). With ``snip_edges`` framing (Kaldi's default), frame
t covers samples [t*S, t*S + L) (S = 160, L = 400 at 16 kHz) and there are
1 + (n - L) // S frames. Its centre is c_t = t*S + L/2 (a point between samples, 200 at t=0).
Frame t takes the label of the segment [start, end) of the .phn file with start <= c_t < end:
a boundary exactly at a frame centre gives the frame to the later segment. Writing predictions
back as segments inverts this: frame t owns samples [c_t - S/2, c_t + S/2), the first segment
starts at 0 and the last ends at the file's end.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from backbone.vectorset import VectorSet
from encoders.vector import Positional1D, make_positional_1d

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000
FRAME_LENGTH = 400  # 25 ms at 16 kHz
FRAME_SHIFT = 160  # 10 ms at 16 kHz

# --- phone sets -----------------------------------------------------------------------------
# Festival's radio phone set (festival/lib/radio_phones.scm) plus TIMIT's utterance-edge h#
FESTIVAL_PHONES = (
    "aa ae ah ao aw ax axr ay b ch d dh dx eh el em en er ey f g hh hv ih iy jh k l m n nx ng "
    "ow oy p r s sh t th uh uw v w y z zh pau brth h#"
).split()
TIMIT61 = (
    "aa ae ah ao aw ax ax-h axr ay b bcl ch d dcl dh dx eh el em en eng epi er ey f g gcl h# hh "
    "hv ih ix iy jh k kcl l m n ng nx ow oy p pau pcl q r s sh t tcl th uh uw ux v w y z zh"
).split()
# Lee & Hon 1989: 61 -> 39 (closures, pauses and h# -> sil; q has no class: its frames are
# ignored and counted). Festival's extra phone brth is a silence too.
FOLD39 = {
    "ao": "aa", "ax": "ah", "ax-h": "ah", "axr": "er", "hv": "hh", "ix": "ih", "el": "l",
    "em": "m", "en": "n", "nx": "n", "eng": "ng", "zh": "sh", "ux": "uw",
    "pcl": "sil", "tcl": "sil", "kcl": "sil", "bcl": "sil", "dcl": "sil", "gcl": "sil",
    "h#": "sil", "pau": "sil", "epi": "sil", "brth": "sil", "q": None,
}
TIMIT39 = sorted({FOLD39.get(p, p) for p in TIMIT61 + FESTIVAL_PHONES} - {None})

PhoneSet = Literal["festival", "timit61", "timit39"]


def phone_names(phone_set: PhoneSet) -> list[str]:
    if phone_set == "festival":
        return list(FESTIVAL_PHONES)
    if phone_set == "timit61":
        return list(TIMIT61)
    if phone_set == "timit39":
        return list(TIMIT39)
    raise ValueError(f"phone_set must be 'festival', 'timit61' or 'timit39', got {phone_set!r}")


# --- audio ----------------------------------------------------------------------------------
_resample_notices: set[tuple[str, int]] = set()


def check_wav_complete(path: Path) -> None:
    """A RIFF/WAVE file whose data chunk is shorter than its header says is truncated
    (libsndfile would silently read what is there). Streaming headers (size 0 or 0xFFFFFFFF)
    declare no size and pass."""
    import struct

    with open(path, "rb") as f:
        head = f.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return
        size = path.stat().st_size
        pos = 12
        while pos + 8 <= size:
            f.seek(pos)
            cid, n = struct.unpack("<4sI", f.read(8))
            if cid == b"data":
                if n not in (0, 0xFFFFFFFF) and pos + 8 + n > size:
                    raise ValueError(f"header declares {n} bytes of audio data, the file holds "
                                     f"{size - pos - 8}")
                return
            pos += 8 + n + (n & 1)


def read_audio(path: str | Path, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Read a wav/flac/NIST file as float32 mono at ``sample_rate``.

    soundfile first (libsndfile: wav, flac, NIST SPHERE as in TIMIT), librosa as fallback.
    Stereo is mixed to mono; another rate is resampled (said once per directory and rate).
    An unreadable, empty or shorter-than-one-frame file is a ValueError naming it.

    Shapes: returns (n,) float32.
    """
    import soundfile as sf

    path = Path(path)
    try:
        check_wav_complete(path)
    except ValueError as e:
        raise ValueError(f"{path}: unreadable or truncated audio file ({e})") from None
    try:
        wav, sr = sf.read(str(path), dtype="float32", always_2d=True)  # (n, C)
    except Exception as e_sf:  # noqa: BLE001 - try librosa before giving up, then name the file
        try:
            import librosa

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mono, sr = librosa.load(str(path), sr=None, mono=False)
            wav = np.atleast_2d(mono).T.astype(np.float32)  # (n, C)
        except Exception as e_lr:  # noqa: BLE001
            raise ValueError(f"{path}: unreadable or truncated audio file (soundfile: {e_sf}; "
                             f"librosa: {type(e_lr).__name__}: {e_lr})") from None
    if wav.shape[1] > 1:
        wav = wav.mean(axis=1, keepdims=True)  # stereo -> mono
    wav = wav[:, 0]
    if len(wav) == 0:
        raise ValueError(f"{path}: empty audio (0 samples)")
    if sr != sample_rate:
        key = (str(path.parent), int(sr))
        if key not in _resample_notices:
            _resample_notices.add(key)
            log.warning("%s: sample rate %d Hz, resampling to %d Hz (said once for %s at %d Hz)",
                        path, sr, sample_rate, path.parent, sr)
        import torchaudio.functional as AF

        wav = AF.resample(torch.from_numpy(np.ascontiguousarray(wav))[None], int(sr), sample_rate)[0].numpy()
    if len(wav) < FRAME_LENGTH:
        raise ValueError(f"{path}: {len(wav)} samples at {sample_rate} Hz is shorter than one "
                         f"25 ms frame ({FRAME_LENGTH} samples)")
    return np.ascontiguousarray(wav, dtype=np.float32)


def num_frames(n_samples: int) -> int:
    """Kaldi snip_edges framing: 1 + (n - L) // S frames (0 when shorter than one frame)."""
    return 0 if n_samples < FRAME_LENGTH else 1 + (n_samples - FRAME_LENGTH) // FRAME_SHIFT


# --- alignments -----------------------------------------------------------------------------
@dataclass
class Segment:
    start: int
    end: int
    phone: str


def read_phn(path: str | Path, n_samples: int, phones: list[str] | None = None,
             fold39: bool = False) -> list[Segment]:
    """Read and check a TIMIT ``.phn`` file: ``start end phone`` per line, in samples.

    Segments must be contiguous (each starts where the previous ended: no overlap, no gap)
    and end within the audio (``n_samples``). With ``fold39`` phones are folded 61 -> 39
    (``q`` becomes None: its frames are ignored). A phone outside ``phones`` is an error.
    """
    path = Path(path)
    segs: list[Segment] = []
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read the phone alignment ({e})") from None
    for ln, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
            raise ValueError(f"{path}:{ln}: expected 'start_sample end_sample phone', got {line!r}")
        s, e, ph = int(parts[0]), int(parts[1]), parts[2]
        if e <= s:
            raise ValueError(f"{path}:{ln}: segment end {e} is not after its start {s}")
        if segs and s < segs[-1].end:
            raise ValueError(f"{path}:{ln}: segment {s}-{e} {ph} overlaps the previous one, which ends at "
                             f"{segs[-1].end}")
        if segs and s > segs[-1].end:
            raise ValueError(f"{path}:{ln}: gap of {s - segs[-1].end} samples between the previous segment "
                             f"(ends at {segs[-1].end}) and {s}-{e} {ph}; segments must be contiguous")
        if e > n_samples:
            raise ValueError(f"{path}:{ln}: segment {s}-{e} {ph} runs past the end of the audio "
                             f"({n_samples} samples)")
        if fold39:
            if ph not in FOLD39 and ph not in TIMIT39:
                raise ValueError(f"{path}:{ln}: phone {ph!r} is neither a TIMIT/Festival phone nor one of "
                                 f"the 39 folded classes")
            ph = FOLD39.get(ph, ph)
        if phones is not None and ph is not None and ph not in phones:
            raise ValueError(f"{path}:{ln}: phone {ph!r} is not in the phone set ({len(phones)} phones: "
                             f"{' '.join(phones)})")
        segs.append(Segment(s, e, ph))
    if not segs:
        raise ValueError(f"{path}: no segments")
    return segs


def frame_centres(n_frames: int) -> np.ndarray:
    """(T,) frame centres in samples (half-integers as float: t*S + L/2)."""
    return np.arange(n_frames) * FRAME_SHIFT + FRAME_LENGTH / 2


def frame_labels(segments: list[Segment], n_frames: int, phones: list[str],
                 ignore_index: int = -100) -> tuple[np.ndarray, int]:
    """The frame-centre rule: frame t gets the segment with start <= c_t < end.

    Frames whose centre no segment covers (before the first or after the last segment) and
    frames of a phone without a class (``q`` under 39-folding) get ``ignore_index``.

    Returns (labels (T,) int64, number of ignored frames).
    """
    index = {p: i for i, p in enumerate(phones)}
    c = frame_centres(n_frames)
    starts = np.array([s.start for s in segments])
    ends = np.array([s.end for s in segments])
    k = np.searchsorted(ends, c, side="right")  # first segment whose end > c
    ids = np.array([index[s.phone] if s.phone is not None else ignore_index for s in segments] + [ignore_index])
    labels = ids[np.minimum(k, len(segments))]
    labels[c < starts[0]] = ignore_index
    return labels.astype(np.int64), int((labels == ignore_index).sum())


def frames_to_segments(labels: list[str], n_samples: int) -> list[Segment]:
    """Merge runs of equal frame labels into .phn segments (the inverse of the centre rule:
    frame t owns [c_t - S/2, c_t + S/2); the first starts at 0, the last ends at n_samples)."""
    if not labels:
        return []
    segs: list[Segment] = []
    start = 0
    for t in range(1, len(labels) + 1):
        if t == len(labels) or labels[t] != labels[t - 1]:
            end = n_samples if t == len(labels) else t * FRAME_SHIFT + FRAME_LENGTH // 2 - FRAME_SHIFT // 2
            segs.append(Segment(start, end, labels[t - 1]))
            start = end
    return segs


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


# --- encoder --------------------------------------------------------------------------------
Normalization = Literal["utterance", "global", "none"]


class SpeechEncoder(nn.Module):
    """Filterbank frames -> VectorSet: mean/variance normalization, SpecAugment in training,
    a linear projection to d_model and a positional encoding.

    Args:
        in_dim: feature width (the DataModule's num_mel_bins, or num_ceps for MFCC).
        d_model: output width.
        normalization: ``utterance`` (each utterance's real frames to zero mean, unit
            variance per bin), ``global`` (training-set statistics, kept as buffers in the
            checkpoint; set by ``SpeechFramesDataModule`` before training) or ``none``.
        freq_mask_param, time_mask_param: SpecAugment mask widths (0 = off), applied
            ``freq_masks`` / ``time_masks`` times per utterance, only in training.
        positional: ``none``, ``sinusoidal`` or ``learned`` (``max_len`` frames).
        conv_kernel: if > 0, a convolution over time (this many frames) after the projection,
            with a residual connection: a local-order front-end, as in Conformer-style models
            (Gulati et al. 2020); truncated attention alone cannot tell left from right.
        dropout: dropout after the projection.
        window: truncated attention for these frames (each sees +-window frames), carried on
            the VectorSet so that a backbone shared with other modalities applies it to
            speech only; None leaves it to the backbone's own ``window``.

    Shapes:
        batch["x"] (B, T, in_dim) float, batch["mask"] (B, T) bool -> VectorSet (B, T, d_model)
    """

    def __init__(self, in_dim: int, d_model: int, normalization: Normalization = "utterance",
                 freq_mask_param: int = 0, time_mask_param: int = 0, freq_masks: int = 2,
                 time_masks: int = 2, positional: Positional1D = "sinusoidal", max_len: int | None = None,
                 conv_kernel: int = 0, dropout: float = 0.0, window: int | None = None) -> None:
        super().__init__()
        if window is not None and window < 1:
            raise ValueError(f"window must be >= 1 (each frame sees +-window frames) or None, got {window}")
        self.window = window
        if normalization not in ("utterance", "global", "none"):
            raise ValueError(f"normalization must be 'utterance', 'global' or 'none', got {normalization!r}")
        import torchaudio.transforms as T

        self.in_dim, self.normalization = in_dim, normalization
        self.register_buffer("mean", torch.zeros(in_dim))
        self.register_buffer("std", torch.ones(in_dim))
        self.register_buffer("stats_fitted", torch.tensor(False))
        self.freq_masks, self.time_masks = freq_masks, time_masks
        self.freq_mask = T.FrequencyMasking(freq_mask_param, iid_masks=True) if freq_mask_param else None
        self.time_mask = T.TimeMasking(time_mask_param, iid_masks=True) if time_mask_param else None
        self.proj = nn.Linear(in_dim, d_model)
        if conv_kernel < 0 or (conv_kernel and conv_kernel % 2 == 0):
            raise ValueError(f"conv_kernel must be 0 (off) or an odd number of frames, got {conv_kernel}")
        self.conv = nn.Conv1d(d_model, d_model, conv_kernel, padding=conv_kernel // 2) if conv_kernel else None
        self.drop = nn.Dropout(dropout)
        self.positional = make_positional_1d(positional, d_model, max_len)

    @torch.no_grad()
    def set_global_stats(self, frames: list[Tensor]) -> None:
        """Fit the ``global`` normalization on training frames, a list of (T_i, in_dim)."""
        x = torch.cat(frames).double()  # (sum T, F)
        self.mean.copy_(x.mean(0).float())
        self.std.copy_(x.std(0).clamp_min(1e-5).float())
        self.stats_fitted.fill_(True)

    def normalize(self, x: Tensor, mask: Tensor) -> Tensor:
        if self.normalization == "none":
            return x
        if self.normalization == "global":
            if not bool(self.stats_fitted):
                raise ValueError("SpeechEncoder(normalization='global') has no statistics: train it with "
                                 "SpeechFramesDataModule (which fits them) or call set_global_stats")
            return (x - self.mean) / self.std
        m = mask[..., None].to(x.dtype)  # (B, T, 1)
        n = m.sum(1, keepdim=True).clamp_min(1)  # (B, 1, 1)
        mean = (x * m).sum(1, keepdim=True) / n  # (B, 1, F)
        var = ((x - mean).pow(2) * m).sum(1, keepdim=True) / n
        return (x - mean) / var.clamp_min(1e-10).sqrt()

    def spec_augment(self, x: Tensor) -> Tensor:
        spec = x.transpose(1, 2)  # (B, F, T): torchaudio masks the last two dims
        if self.freq_mask is not None:
            for _ in range(self.freq_masks):
                spec = self.freq_mask(spec)
        if self.time_mask is not None:
            for _ in range(self.time_masks):
                spec = self.time_mask(spec)
        return spec.transpose(1, 2)  # (B, T, F)

    def forward(self, batch: dict) -> VectorSet:
        x: Tensor = batch["x"]
        mask: Tensor = batch["mask"]
        if x.shape[-1] != self.in_dim:
            raise ValueError(f"SpeechEncoder expects {self.in_dim} features per frame, got {x.shape[-1]}: set "
                             "in_dim to the DataModule's num_mel_bins (num_ceps for MFCC)")
        x = self.normalize(x, mask)  # (B, T, F)
        if self.training:
            x = self.spec_augment(x)
        m = mask[..., None].to(x.dtype)  # (B, T, 1)
        h = self.proj(x) * m  # (B, T, D); zero padding looks like the zeros past the ends
        if self.conv is not None:
            h = h + F.gelu(self.conv(h.transpose(1, 2))).transpose(1, 2) * m  # (B, T, D)
        h = self.drop(h)
        pe = self.positional(x.shape[1], x.device)
        if pe is not None:
            h = h + pe
        return VectorSet(x=h * m, mask=mask, window=self.window)
