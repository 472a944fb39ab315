"""Phone alignments and frame labels: .phn files, 25 ms / 10 ms framing, the frame-centre rule (see the package docstring), and frames back to segments."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vecset.encoders.speech.framing import FRAME_LENGTH, FRAME_SHIFT, SAMPLE_RATE
from vecset.encoders.speech.phones import FOLD39, TIMIT39


# --- alignments -----------------------------------------------------------------------------
@dataclass
class Segment:
    start: int
    end: int
    phone: str


def read_phn(path: str | Path, n_samples: int, phones: list[str] | None = None,
             fold39: bool = False, sample_rate: int = SAMPLE_RATE, audio: str | Path | None = None) -> list[Segment]:
    """Read and check a TIMIT ``.phn`` file: ``start end phone`` per line, in samples of its
    audio file (``audio``, named in errors), which holds ``n_samples`` at ``sample_rate``.

    Segments must be contiguous (each starts where the previous ended: no overlap, no gap)
    and end within the audio. With ``fold39`` phones are folded 61 -> 39 (``q`` becomes None:
    its frames are ignored). A phone outside ``phones`` is an error. The segments keep the
    file's sample numbers (``frame_labels`` takes the rate).
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
                             f"({n_samples} samples at {sample_rate} Hz{f' in {audio}' if audio else ''})"
                             f"{rate_hint(last_end(lines, e), n_samples, sample_rate)}")
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
    check_coverage(path, segs[-1].end, n_samples, sample_rate, Path(audio) if audio else None)
    return segs


def write_phn(path: str | Path, segments: list[Segment]) -> None:
    """A TIMIT ``.phn``: ``start end phone`` per segment, in samples (``read_phn`` reads it)."""
    Path(path).write_text("".join(f"{s.start} {s.end} {s.phone}\n" for s in segments))


def last_end(lines: list[str], default: int) -> int:
    """The end sample of a .phn's last well-formed line (``default`` when none)."""
    for line in reversed(lines):
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit():
            return int(parts[1])
    return default


def frame_centres(n_frames: int) -> np.ndarray:
    """(T,) frame centres in 16 kHz samples, t*S + L/2 (int64: L is even)."""
    return np.arange(n_frames, dtype=np.int64) * FRAME_SHIFT + FRAME_LENGTH // 2


def frame_labels(segments: list[Segment], n_frames: int, phones: list[str],
                 ignore_index: int = -100, sample_rate: int = SAMPLE_RATE) -> tuple[np.ndarray, int]:
    """The frame-centre rule: frame t gets the segment with start <= c_t < end, compared in time
    (the segments count samples at ``sample_rate``, the centres at 16 kHz; in integers, exact).

    Frames whose centre no segment covers (before the first or after the last segment) and
    frames of a phone without a class (``q`` under 39-folding) get ``ignore_index``.

    Returns (labels (T,) int64, number of ignored frames).
    """
    index = {p: i for i, p in enumerate(phones)}
    # both sides in units of 1 / (16000 * sample_rate) s: start / sample_rate <= c / 16000
    c = frame_centres(n_frames) * sample_rate
    starts = np.array([s.start for s in segments], dtype=np.int64) * SAMPLE_RATE
    ends = np.array([s.end for s in segments], dtype=np.int64) * SAMPLE_RATE
    k = np.searchsorted(ends, c, side="right")  # first segment whose end > c
    ids = np.array([index[s.phone] if s.phone is not None else ignore_index for s in segments] + [ignore_index])
    labels = ids[np.minimum(k, len(segments))]
    labels[c < starts[0]] = ignore_index
    return labels.astype(np.int64), int((labels == ignore_index).sum())


def frames_to_segments(labels: list[str], n_samples: int, sample_rate: int = SAMPLE_RATE) -> list[Segment]:
    """Merge runs of equal frame labels into .phn segments (the inverse of the centre rule:
    frame t owns [c_t - S/2, c_t + S/2); the first starts at 0, the last ends at n_samples),
    in samples of the audio file: ``n_samples`` at ``sample_rate``, boundaries rounded to the
    nearest file sample (half up)."""
    if not labels:
        return []
    segs: list[Segment] = []
    start = 0
    for t in range(1, len(labels) + 1):
        if t == len(labels) or labels[t] != labels[t - 1]:
            b = t * FRAME_SHIFT + FRAME_LENGTH // 2 - FRAME_SHIFT // 2  # at 16 kHz
            end = n_samples if t == len(labels) else (2 * b * sample_rate + SAMPLE_RATE) // (2 * SAMPLE_RATE)
            segs.append(Segment(start, end, labels[t - 1]))
            start = end
    return segs


# sample rates audio commonly has: an alignment counted in samples of another one is named
COMMON_RATES = (8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000)


def rate_hint(end: int, n_samples: int, sample_rate: int) -> str:
    """Why an alignment ending at sample ``end`` of audio with ``n_samples`` may be wrong: its
    times counted at another sample rate than the audio's (the rate that would make it end with
    the audio, where that is a common one); "" when none fits."""
    implied = sample_rate * end / max(n_samples, 1)
    near = min(COMMON_RATES, key=lambda r: abs(r - implied))
    if near == sample_rate or abs(near - implied) > 0.05 * near:
        return ""
    return (f"; the likely cause: the alignment's sample rate is {near} Hz, the audio's {sample_rate} Hz (its last "
            f"end, sample {end}, is the audio's end at {near} Hz): resample the audio to {near} Hz or rescale "
            "the alignment")


def check_coverage(path: Path, end: int, n_samples: int, sample_rate: int, audio: Path | None) -> None:
    """An alignment that ends before half of its audio is an error (its labels would cover only
    the start of each file), naming the likely cause: another sample rate than the audio's."""
    if 2 * end < n_samples:
        raise ValueError(f"{path}: the alignment ends at sample {end} ({end / sample_rate:.2f} s), {100 * end / n_samples:.0f}% "
                         f"into its audio ({n_samples} samples at {sample_rate} Hz{f' in {audio}' if audio else ''}); "
                         f"an alignment covers its whole audio{rate_hint(end, n_samples, sample_rate) or ''}")
