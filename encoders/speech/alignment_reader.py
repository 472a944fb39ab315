"""Which alignment file an utterance has (``AlignmentSource``: the format, or ``auto`` by the files
beside the audio) and reading it into checked phone segments and words (``AlignmentReader``), with
the per-format readers of ``alignment_textgrid.py``, ``alignment_ctm.py`` and ``alignment_buckeye.py``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from vecset.encoders.speech.alignment import Segment, check_coverage
from vecset.encoders.speech.alignment_buckeye import read_buckeye
from vecset.encoders.speech.alignment_ctm import ctm_intervals, read_ctm
from vecset.encoders.speech.alignment_formats import (
    ALIGNMENT_EXTS,
    BUCKEYE_EDGES,
    BUCKEYE_PHONES,
    AlignmentFormat,
    Interval,
    PhoneMap,
    check_intervals,
    words_from,
)
from vecset.encoders.speech.alignment_textgrid import read_textgrid, textgrid_tier
from vecset.encoders.speech.phones import PhoneSet
from vecset.encoders.speech.transcripts import Word


@dataclass(frozen=True)
class AlignmentSource:
    """Where an utterance's alignment is (the data module's options of the same names).

    Args:
        format: ``auto`` (the one alignment file beside the audio: ``.phn``, ``.TextGrid`` or
            ``.phones``; with ``phone_ctm`` set, the CTM), ``phn``, ``textgrid``, ``ctm``, ``buckeye``.
        phone_tier, word_tier: a TextGrid's tier names (MFA's ``phones`` and ``words``);
            word_tier None: no words from the TextGrid.
        phone_ctm, word_ctm: Kaldi CTM files for the whole corpus (word_ctm optional).
    """

    format: AlignmentFormat = "auto"
    phone_tier: str = "phones"
    word_tier: str | None = "words"
    phone_ctm: Path | None = None
    word_ctm: Path | None = None

    def __post_init__(self) -> None:
        if self.format not in ("auto", "phn", "textgrid", "ctm", "buckeye"):
            raise ValueError(f"alignment_format must be auto, phn, textgrid, ctm or buckeye, got {self.format!r}")
        if self.format == "ctm" and self.phone_ctm is None:
            raise ValueError("alignment_format ctm needs phone_ctm: the Kaldi phone CTM file of the corpus")
        if self.format not in ("auto", "ctm") and (self.phone_ctm is not None or self.word_ctm is not None):
            raise ValueError(f"phone_ctm / word_ctm are read with alignment_format ctm (or auto), not "
                             f"{self.format!r}")
        if self.word_ctm is not None and self.phone_ctm is None:
            raise ValueError("word_ctm is read together with phone_ctm; set phone_ctm too")


def beside(audio: Path, exts: tuple[str, ...]) -> Path | None:
    """The file beside ``audio`` with one of ``exts``, in the given, lower or upper case."""
    for ext in exts:
        for e in (ext, ext.lower(), ext.upper()):
            if audio.with_suffix(e).exists():
                return audio.with_suffix(e)
    return None


@dataclass
class Alignment:
    """An utterance's alignment as read: its phone ``segments`` (in the set, 39-folded where
    asked), its ``words`` (None: no word alignment), the zero-length words left out, the
    ``format`` and ``source`` file, and what label mapping did (``mapped``: counts)."""

    segments: list[Segment]
    words: list[Word] | None
    zero_length_words: list[str]
    format: str
    source: Path
    mapped: Counter[str]


class AlignmentReader:
    """Finds and reads an utterance's phone (and word) alignment in any format (``AlignmentSource``),
    mapped to ``phone_set``. A .phn is read by ``alignment.read_phn`` with its .wrd; the CTM files
    are read once."""

    def __init__(self, source: AlignmentSource, phone_set: PhoneSet) -> None:
        self.source = source
        self.phone_set = phone_set
        self.map = PhoneMap(phone_set)
        self._ctm: dict[Path, dict[str, list[tuple[float, float, str, int]]]] = {}

    def ctm(self, path: Path) -> dict[str, list[tuple[float, float, str, int]]]:
        if path not in self._ctm:
            self._ctm[path] = read_ctm(path)
        return self._ctm[path]

    def find(self, audio: Path) -> tuple[str, Path]:
        """(format, file) of ``audio``'s alignment; none, or more than one format in ``auto``, is
        an error naming the audio file."""
        fmt = self.source.format
        if fmt == "ctm" or (fmt == "auto" and self.source.phone_ctm is not None):
            return "ctm", Path(self.source.phone_ctm)  # type: ignore[arg-type]
        formats = [fmt] if fmt != "auto" else list(ALIGNMENT_EXTS)
        found = {f: p for f in formats if (p := beside(audio, ALIGNMENT_EXTS[f])) is not None}
        if len(found) > 1:
            names = ", ".join(p.name for p in found.values())
            raise ValueError(f"{audio}: alignments in more than one format beside it ({names}); set the data "
                             f"module's alignment_format to {' or '.join(found)}")
        if not found:
            names = [audio.with_suffix(ALIGNMENT_EXTS[f][0]).name for f in formats]
            others = f" (nor {' nor '.join(names[1:])})" if len(names) > 1 else ""
            raise ValueError(f"{audio}: no {names[0]} next to it{others}; every training, validation and test utterance "
                             "needs its phone alignment (alignment_format: phn, textgrid, buckeye, or ctm with "
                             "phone_ctm)")
        return next(iter(found.items()))

    def read(self, audio: Path, n_samples: int, sample_rate: int, fmt: str, path: Path) -> Alignment:
        """The alignment of ``audio`` (``n_samples`` at ``sample_rate``, its own) from ``path`` in
        ``fmt`` (not phn: the reader reads a .phn itself)."""
        zero: list[str] = []
        words: list[Word] | None = None
        fixed: Counter[str] = Counter()  # gaps and overruns of at most 10 ms mended (check_intervals)
        if fmt == "textgrid":
            tg = read_textgrid(path)
            phones = textgrid_tier(path, tg, self.source.phone_tier, sample_rate)
            if self.source.word_tier is not None:
                w = textgrid_tier(path, tg, self.source.word_tier, sample_rate)
                w = check_intervals(path, w, n_samples, sample_rate, audio, fixed=fixed)  # a Praat tier has no gaps
                words = words_from(w, zero, path)
            extra = None
        elif fmt == "ctm":
            utt = audio.stem
            rows = self.ctm(path)
            if utt not in rows:
                raise ValueError(f"{path}: no rows for utterance {utt!r} (the audio file {audio}'s stem is its "
                                 "utterance id)")
            phones = ctm_intervals(path, rows[utt], sample_rate)
            if self.source.word_ctm is not None:
                wpath = Path(self.source.word_ctm)
                wrows = self.ctm(wpath)
                if utt not in wrows:
                    raise ValueError(f"{wpath}: no rows for utterance {utt!r} (the audio file {audio}'s stem is its "
                                     "utterance id)")
                words = words_from(ctm_intervals(wpath, wrows[utt], sample_rate), zero, wpath)
                check_intervals(wpath, [Interval(w.start, w.end, w.word, f"word {w.word!r}") for w in words],
                                n_samples, sample_rate, audio, contiguous=False, fixed=Counter())
            extra = None
        elif fmt == "buckeye":
            phones = [iv for iv in read_buckeye(path, sample_rate) if iv.label not in BUCKEYE_EDGES]
            if (wpath := beside(audio, (".words",))) is not None:
                w = [iv for iv in read_buckeye(wpath, sample_rate) if iv.label not in BUCKEYE_EDGES]
                w = check_intervals(wpath, w, n_samples, sample_rate, audio, fixed=fixed)
                words = words_from(w, zero, wpath)
            extra = BUCKEYE_PHONES
        else:
            raise ValueError(f"unknown alignment format {fmt!r}")
        if not phones:
            raise ValueError(f"{path}: no phone intervals for {audio}")
        phones = check_intervals(path, phones, n_samples, sample_rate, audio, fixed=fixed)
        check_coverage(path, phones[-1].end, n_samples, sample_rate, audio)
        segs = self.map.segments(path, phones, extra)
        return Alignment(segs, words, zero, fmt, path, self.map.counts + fixed)
