"""The Buckeye corpus's ``.phones`` and ``.words``: a header ending in ``#``, then ``end_time color
label`` per line, each segment starting where the previous one ended.
"""

from __future__ import annotations

from pathlib import Path

from vecset.encoders.speech.alignment_formats import (
    Interval,
    span,
    to_sample,
)


def read_buckeye(path: Path, sample_rate: int) -> list[Interval]:
    """The segments of a Buckeye ``.phones`` or ``.words`` file: after the header's ``#`` line, each
    line ``end_time color label`` (a ``.words`` label is ``word; ...``: the word is kept) ends a
    segment that starts at the previous end (the first at 0)."""
    try:
        lines = path.read_text(errors="strict").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read it ({e})") from None
    try:
        body = next(i for i, line in enumerate(lines) if line.strip() == "#") + 1
    except StopIteration:
        raise ValueError(f"{path}: no '#' line ending the header (Buckeye .phones/.words files have one)") from None
    out, prev = [], 0.0
    for ln, line in enumerate(lines[body:], body + 1):
        if not line.strip():
            continue
        parts = line.split(None, 2)
        try:
            if len(parts) < 2:
                raise ValueError
            end = float(parts[0])
        except ValueError:
            raise ValueError(f"{path}:{ln}: expected 'end_time color label', got {line!r}") from None
        label = parts[2].split(";")[0].strip() if len(parts) == 3 else ""
        out.append(Interval(to_sample(prev, sample_rate), to_sample(end, sample_rate), label,
                            f"line {ln} ({span(prev, end)})"))
        prev = end
    return out
