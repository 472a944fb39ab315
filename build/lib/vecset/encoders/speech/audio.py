"""Reading audio: every format the installed libsndfile reads, resampled to 16 kHz; the file's own rate and length are kept (a .phn counts the file's own samples)."""

from __future__ import annotations

import functools
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from vecset.encoders.speech.framing import FRAME_LENGTH, SAMPLE_RATE

log = logging.getLogger(__name__)


# --- audio ----------------------------------------------------------------------------------
_resample_notices: set[tuple[str, int]] = set()
# usual extensions of formats soundfile reads besides its own rule (an extension is a format's
# name: .wav WAV, .mp3 MP3); libsndfile reads a file by its content, whatever it is called
_EXTENSION_ALIASES = {"AIFF": (".aif", ".aifc"), "NIST": (".sph",), "OGG": (".oga",)}


@functools.lru_cache(maxsize=1)
def audio_extensions() -> tuple[str, ...]:
    """The file extensions ``read_audio`` reads (lower case, .wav and .flac first): every format
    the installed libsndfile reads (``soundfile.available_formats()``; MP3 since libsndfile 1.1)
    under soundfile's extension rule and the usual aliases (.aif, .sph, .oga; .opus where it
    decodes Opus). RAW is left out: a header-less file does not say its rate or width."""
    import soundfile as sf

    formats = set(sf.available_formats()) - {"RAW"}
    exts = [f".{f.lower()}" for f in sorted(formats)]
    exts += [e for f, aliases in _EXTENSION_ALIASES.items() if f in formats for e in aliases]
    if "OGG" in formats and "OPUS" in sf.available_subtypes("OGG"):
        exts.append(".opus")
    first = [e for e in (".wav", ".flac") if e in exts]
    return tuple(first + [e for e in exts if e not in first])


@dataclass
class Audio:
    """A waveform at 16 kHz and what its file holds: a .phn counts the file's own samples.

    Shapes: wav (n,) float32 at ``SAMPLE_RATE``; n = ceil(file_samples * SAMPLE_RATE / file_rate).
    """

    wav: np.ndarray
    file_rate: int  # Hz
    file_samples: int  # the file's length at file_rate


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


def read_audio(path: str | Path, sample_rate: int = SAMPLE_RATE) -> Audio:
    """Read an audio file as float32 mono at ``sample_rate``, with the file's own rate and length.

    soundfile first (libsndfile: wav, flac, NIST SPHERE as in TIMIT, mp3, ogg, ... see
    ``audio_extensions``), librosa as fallback. Stereo is mixed to mono; another rate is
    resampled (said once per directory and rate). An unreadable, empty or shorter-than-one-frame
    file is a ValueError naming it.
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
    file_samples, sr = len(wav), int(sr)
    if sr != sample_rate:
        key = (str(path.parent), int(sr))
        if key not in _resample_notices:
            _resample_notices.add(key)
            log.warning("%s: sample rate %d Hz, resampling to %d Hz (said once for %s at %d Hz)",
                        path, sr, sample_rate, path.parent, sr)
        import torchaudio.functional as AF

        wav = AF.resample(torch.from_numpy(np.ascontiguousarray(wav))[None], int(sr), sample_rate)[0].numpy()
    if len(wav) < FRAME_LENGTH:
        resampled = f" ({len(wav)} at {sample_rate} Hz)" if sr != sample_rate else ""
        raise ValueError(f"{path}: {file_samples} samples at {sr} Hz{resampled} is shorter than one "
                         f"25 ms frame ({FRAME_LENGTH} samples at {sample_rate} Hz)")
    return Audio(np.ascontiguousarray(wav, dtype=np.float32), sr, file_samples)
