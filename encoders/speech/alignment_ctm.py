"""Kaldi CTM alignments: one file for many utterances, ``utterance channel start duration label
[confidence]`` per line; the utterance id is the audio file's stem.
"""

from __future__ import annotations

from pathlib import Path

from vecset.encoders.speech.alignment_formats import (
    Interval,
    span,
    to_sample,
)


def read_ctm(path: Path) -> dict[str, list[tuple[float, float, str, int]]]:
    """A CTM file: utterance id -> its rows (start s, end s, label, line number) in file order."""
    out: dict[str, list[tuple[float, float, str, int]]] = {}
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read the CTM file ({e})") from None
    for ln, line in enumerate(lines, 1):
        parts = line.split()
        if not parts or parts[0].startswith(";;"):
            continue
        try:
            if len(parts) not in (5, 6):
                raise ValueError
            start, dur = float(parts[2]), float(parts[3])
        except ValueError:
            raise ValueError(f"{path}:{ln}: expected 'utterance channel start duration label [confidence]', "
                             f"got {line!r}") from None
        out.setdefault(parts[0], []).append((start, start + dur, parts[4], ln))
    if not out:
        raise ValueError(f"{path}: no CTM rows")
    return out


def ctm_intervals(path: Path, rows: list[tuple[float, float, str, int]], sample_rate: int) -> list[Interval]:
    return [Interval(to_sample(s, sample_rate), to_sample(e, sample_rate), lab, f"line {ln} ({span(s, e)})")
            for s, e, lab, ln in rows]


def write_ctm(path: Path, utterance: str, intervals: list[tuple[float, float, str]]) -> None:
    """A CTM file of one utterance: ``utterance 1 start duration label`` per interval (start s,
    end s, label), times to 0.1 µs (a 16 kHz sample's time exactly: ``read_ctm`` gives the
    samples back)."""
    lines = [f"{utterance} 1 {s:.7f} {e - s:.7f} {lab}\n" for s, e, lab in intervals]
    Path(path).write_text("".join(lines))
