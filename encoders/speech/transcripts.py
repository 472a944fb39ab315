"""TIMIT's word-level files beside an utterance: ``.wrd`` (time-aligned words) and ``.txt``
(the sentence), the words of each frame, and the sentence normalised for comparison."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vecset.encoders.speech.alignment import frame_centres
from vecset.encoders.speech.framing import SAMPLE_RATE


@dataclass
class Word:
    start: int
    end: int
    word: str


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read it ({e})") from None


def read_wrd(path: str | Path, zero_length: list[str] | None = None) -> list[Word]:
    """A TIMIT ``.wrd`` file: ``start end word`` per line in samples of its audio file, in order
    and not overlapping (gaps are the pauses between words).

    Args:
        zero_length: where given, a word whose end equals its start (a clitic an aligner gave
            no time: Festival's ``0 0 's``) is left out and its ``file:line`` appended here;
            otherwise it is an error, as is an end before the start.
    """
    path = Path(path)
    words: list[Word] = []
    for ln, line in enumerate(_lines(path), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
            raise ValueError(f"{path}:{ln}: expected 'start_sample end_sample word', got {line!r}")
        s, e = int(parts[0]), int(parts[1])
        if e == s and zero_length is not None:
            zero_length.append(f"{path}:{ln}")
            continue
        if e <= s:
            raise ValueError(f"{path}:{ln}: word end {e} is not after its start {s}")
        if words and s < words[-1].end:
            raise ValueError(f"{path}:{ln}: word {s}-{e} {parts[2]} overlaps the previous one, which ends at "
                             f"{words[-1].end}")
        words.append(Word(s, e, parts[2]))
    return words


def word_frames(words: list[Word], n_frames: int, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """(T,) int64: the index in ``words`` of the word each frame lies in, by the frame-centre
    rule of the phone labels (start <= c_t < end, compared in time, exactly), or -1 for a
    frame in no word (a pause, the utterance's edges)."""
    c = frame_centres(n_frames) * sample_rate
    if not words:
        return np.full(n_frames, -1, dtype=np.int64)
    starts = np.array([w.start for w in words], dtype=np.int64) * SAMPLE_RATE
    ends = np.array([w.end for w in words], dtype=np.int64) * SAMPLE_RATE
    k = np.searchsorted(ends, c, side="right")  # the first word that ends after the centre
    inside = (k < len(words)) & (starts[np.minimum(k, len(words) - 1)] <= c)
    return np.where(inside, k, -1).astype(np.int64)


def read_txt(path: str | Path) -> str:
    """The sentence of a TIMIT ``.txt`` file (``start end sentence``; the sample numbers are
    optional here)."""
    path = Path(path)
    text = " ".join(_lines(path)).strip()
    m = re.fullmatch(r"(\d+)\s+(\d+)\s+(.*)", text, flags=re.S)
    return m.group(3) if m else text


def normalise_sentence(text: str) -> str:
    """Case-folded, punctuation removed, whitespace collapsed: the form in which two
    transcripts count as the same sentence."""
    return " ".join(re.sub(r"[^\w\s]", "", text.casefold()).split())
