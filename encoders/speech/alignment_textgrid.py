"""Praat TextGrid alignments (long or short text format; the Montreal Forced Aligner writes one per
utterance with a ``phones`` and a ``words`` interval tier), parsed by ``praatio``: a tier as intervals.
"""

from __future__ import annotations

from pathlib import Path

from vecset.encoders.speech.alignment_formats import (
    Interval,
    span,
    to_sample,
)


def read_textgrid(path: Path) -> dict:
    """A TextGrid (long or short text format, or praatio's JSON) as praatio's dictionary: its
    ``tiers``, each with ``name``, ``class`` and ``entries`` (start, end, label), empty intervals
    kept and nothing checked yet (``check_intervals`` names the tier and interval of a problem)."""
    from praatio.utilities import textgrid_io

    try:
        try:  # Praat writes UTF-16 or UTF-8 (as praatio's openTextgrid reads them)
            data = path.read_text(encoding="utf-16")
        except UnicodeError:
            data = path.read_text(encoding="utf-8")
        return textgrid_io.parseTextgridStr(data, includeEmptyIntervals=True)
    except Exception as e:  # noqa: BLE001 - praatio's parser fails in many ways on a broken file: name it
        raise ValueError(f"{path}: cannot read it as a Praat TextGrid ({type(e).__name__}: {e})") from None


def textgrid_tier(path: Path, tg: dict, tier: str, sample_rate: int) -> list[Interval]:
    """The intervals of the interval tier ``tier`` of ``tg`` (``read_textgrid``), in samples."""
    names = [t["name"] for t in tg["tiers"]]
    if tier not in names:
        raise ValueError(f"{path}: no tier {tier!r} (its tiers: {', '.join(map(repr, names)) or 'none'}); set the "
                         "data module's phone_tier / word_tier to the names your aligner writes")
    if names.count(tier) > 1:
        raise ValueError(f"{path}: {names.count(tier)} tiers named {tier!r}; which one is the alignment is unclear")
    t = tg["tiers"][names.index(tier)]
    if t["class"] != "IntervalTier":
        raise ValueError(f"{path}: tier {tier!r} is a {t['class']}; an alignment needs an IntervalTier")
    return [Interval(to_sample(float(s), sample_rate), to_sample(float(e), sample_rate), str(lab).strip(),
                     f"tier {tier!r}, interval {i} ({span(float(s), float(e))})")
            for i, (s, e, lab) in enumerate(t["entries"], 1)]


def write_textgrid(path: Path, tiers: dict[str, list[tuple[float, float, str]]], duration: float) -> None:
    """A Praat TextGrid (long text format, UTF-8, as praatio writes it) with one interval tier per
    ``tiers`` entry: name -> its intervals (start s, end s, label), contiguous from 0 to
    ``duration``; ``read_textgrid`` reads it back."""
    from praatio.utilities import textgrid_io
    from praatio.utilities.constants import Interval as PraatInterval

    tg = {"xmin": 0.0, "xmax": duration,
          "tiers": [{"class": "IntervalTier", "name": name, "xmin": 0.0, "xmax": duration,
                     "entries": [PraatInterval(s, e, lab) for s, e, lab in entries]} for name, entries in tiers.items()]}
    # no ultrashort-interval removal: every interval is written as given
    text = textgrid_io.getTextgridAsStr(tg, "long_textgrid", includeBlankSpaces=True, minimumIntervalLength=None)
    Path(path).write_text(text, encoding="utf-8")
