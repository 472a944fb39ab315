"""Phone and word alignments in the formats real speech comes in, beside TIMIT's ``.phn``/``.wrd``:

- ``textgrid``: Praat TextGrid (long or short text format; the Montreal Forced Aligner writes
  one per utterance with a ``phones`` and a ``words`` interval tier), parsed by ``praatio``;
- ``ctm``: Kaldi CTM, one file for many utterances (``utterance channel start duration label
  [confidence]`` per line); a phone CTM and optionally a word CTM, the utterance id being the
  audio file's stem;
- ``buckeye``: the Buckeye corpus's ``.phones`` (and ``.words``): a header ending in ``#``, then
  ``end_time color label`` per line, each segment starting where the previous one ended.

Times in seconds become samples of the audio file (``round(t * rate)``), so an alignment written
from a ``.phn`` reads back to the same samples and the same frame labels (the frame-centre rule of
``alignment.py``). The phone segments are checked as a .phn's are (each ends after it starts, no
overlap, no gap, nothing past the audio's end); an error names the file, the tier (or line) and
the interval.

Labels are mapped to the job's phone set (``PhoneMap``): a label of the set is kept; a silence
label (MFA's empty interval, ``sil``, ``sp``, ``spn``, Kaldi's ``SIL``, Buckeye's ``SIL``...) becomes
``h#`` at the utterance's edges and ``pau`` inside it (TIMIT's convention, folded to ``sil`` under
``timit39``); ARPAbet in capitals with a stress digit (MFA, CMUdict) loses the digit and is
lower-cased (``AH0``, the unstressed schwa, becomes ``ax`` where the set has it); Kaldi's word-
position suffixes (``_B _I _E _S``) are stripped. What was mapped is counted; a label that maps
to no phone is an error naming file, tier, interval and label.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from vecset.encoders.speech.alignment import Segment, check_coverage, rate_hint
from vecset.encoders.speech.phones import FOLD39, TIMIT39, PhoneSet, phone_names
from vecset.encoders.speech.transcripts import Word

AlignmentFormat = Literal["auto", "phn", "textgrid", "ctm", "buckeye"]
# the per-utterance alignment files beside an audio file, by format (CTM is one file for a corpus)
ALIGNMENT_EXTS: dict[str, tuple[str, ...]] = {"phn": (".phn",), "textgrid": (".TextGrid", ".textgrid"),
                                              "buckeye": (".phones",)}
# labels that mean "no phone here" (compared case-folded): MFA's empty interval, sil / sp
# (short pause) / spn (spoken noise: an unknown word), Kaldi's SIL / NSN / SPN, Buckeye's
# silences and non-speech
SILENCE_LABELS = frozenset(
    ["", "sil", "sp", "spn", "nsn", "<eps>", "<sil>", "<unk>", "noise", "vocnoise", "laugh", "iver",
     "<noise>", "<vocnoise>", "<laugh>", "<iver>"])
# a word tier's pauses (MFA's empty intervals, Kaldi's <eps>); markers in <..> or {..} are not words
WORD_PAUSES = frozenset(["", "<eps>", "sil", "sp"])
# Buckeye's labels beyond ARPAbet: its nasalized vowels (aan, ehn...) and glottal stop tq
BUCKEYE_PHONES = {v + "n": v for v in "aa ae ah ao aw ay eh er ey ih iy ow oy uh uw".split()} | {"tq": "q"}
# Buckeye's markers of the untranscribed stretch before and after the transcription: no segment
BUCKEYE_EDGES = frozenset(["{B_TRANS}", "{E_TRANS}"])
KALDI_POSITION = re.compile(r"_[BIES]$")
ARPABET_STRESS = re.compile(r"([A-Za-z]+)([012])")


@dataclass(frozen=True)
class Interval:
    """A labelled stretch of an alignment file, in samples of its audio file; ``where`` says where
    it is in the file for errors (``tier 'phones', interval 3 (0.100-0.230 s)``, ``line 12``)."""

    start: int
    end: int
    label: str
    where: str


class PhoneMap:
    """Maps an alignment's phone labels to a phone set's names (see the module docstring) and
    counts what it mapped: ``counts['stress digits stripped']`` and the like."""

    def __init__(self, phone_set: PhoneSet) -> None:
        self.phone_set = phone_set
        self.fold39 = phone_set == "timit39"
        # the labels taken as they are: the set's names, and under timit39 every phone it folds
        self.accept = set(FOLD39) | set(TIMIT39) if self.fold39 else set(phone_names(phone_set))
        self.accept.discard(None)  # type: ignore[arg-type]
        self.counts: Counter[str] = Counter()  # what the last ``segments`` call mapped

    def __call__(self, label: str, edge: bool, extra: dict[str, str] | None = None) -> str:
        """The phone-set name (before 39-folding) of ``label``; ``edge``: the segment is the
        utterance's first or last (a silence there is h#). Raises KeyError when none fits."""
        if label in self.accept:
            return label
        base = KALDI_POSITION.sub("", label.strip())
        if base != label.strip():
            self.counts["Kaldi word-position suffixes stripped"] += 1
        if base.casefold() in SILENCE_LABELS:
            self.counts["silence labels mapped to h#/pau"] += 1
            return "h#" if edge else "pau"
        if base in self.accept:
            return base
        if (m := ARPABET_STRESS.fullmatch(base)) is not None:
            self.counts["stress digits stripped"] += 1
            name, stress = m.group(1).lower(), m.group(2)
            if name == "ah" and stress == "0" and "ax" in self.accept:
                return "ax"  # CMUdict's unstressed AH is the schwa, TIMIT's and Festival's ax
            if name in self.accept:
                return name
        if base.isalpha() and base.lower() in self.accept:
            self.counts["ARPAbet labels lower-cased"] += 1
            return base.lower()
        if extra and base.lower() in extra and extra[base.lower()] in self.accept:
            self.counts[f"{base.lower()} mapped to {extra[base.lower()]}"] += 1
            return extra[base.lower()]
        raise KeyError(label)

    def segments(self, path: Path, intervals: list[Interval], extra: dict[str, str] | None = None) -> list[Segment]:
        """The intervals as segments of the set (39-folded under timit39: q becomes None); what was
        mapped is counted in ``self.counts``."""
        self.counts = Counter()
        segs = []
        for i, iv in enumerate(intervals):
            try:
                ph: str | None = self(iv.label, i == 0 or i == len(intervals) - 1, extra)
            except KeyError:
                hint = (" (integer phone ids: write the CTM with phone symbols, e.g. Kaldi's utils/int2sym.pl "
                        "with phones.txt)" if iv.label.isdigit() else "")
                raise ValueError(f"{path}: {iv.where}: label {iv.label!r} maps to no phone of the {self.phone_set} "
                                 f"set{hint}; phones: {' '.join(sorted(self.accept))}") from None
            if self.fold39:
                ph = FOLD39.get(ph, ph)
            segs.append(Segment(iv.start, iv.end, ph))
        return segs


def check_intervals(path: Path, intervals: list[Interval], n_samples: int, sample_rate: int,
                    audio: Path | None, contiguous: bool = True, fixed: Counter[str] | None = None) -> list[Interval]:
    """Each interval ends after it starts and within the audio, none overlaps the previous one,
    and with ``contiguous`` each starts where the previous ended (a phone tier has no gaps). A gap,
    an overlap or an overrun past the audio's end of at most one frame shift (10 ms: aligners
    round times to 1 ms or 10 ms) is mended (the previous interval ends where the next starts,
    the last one at the audio's end) and counted in ``fixed``; a larger one is an error. The
    intervals as mended."""
    tolerance = sample_rate // 100  # one 10 ms frame shift, in samples
    fixed = Counter() if fixed is None else fixed
    for before, iv in zip(intervals, intervals[1:], strict=False):
        if iv.start < before.start:
            raise ValueError(f"{path}: {iv.where}: {iv.label!r} starts before the previous interval ({before.where}) "
                             "starts: the intervals are not in time order (sort them by start time)")
    out: list[Interval] = []
    for iv in intervals:
        prev = out[-1] if out else None
        if iv.end <= iv.start:
            raise ValueError(f"{path}: {iv.where}: {iv.label!r} ends (sample {iv.end}) not after it starts "
                             f"(sample {iv.start})")
        if prev is not None and iv.start < prev.end and prev.end - iv.start <= tolerance and iv.start > prev.start:
            out[-1] = prev = replace(prev, end=iv.start)  # rounded times: the previous one ends where this starts
            fixed["overlaps of at most 10 ms cut"] += 1
        if prev is not None and iv.start < prev.end:
            raise ValueError(f"{path}: {iv.where}: {iv.label!r} overlaps the previous interval ({prev.where}), "
                             f"which ends at sample {prev.end}")
        if contiguous and prev is not None and iv.start > prev.end:
            if iv.start - prev.end > tolerance:
                raise ValueError(f"{path}: {iv.where}: gap of {iv.start - prev.end} samples before {iv.label!r} "
                                 f"(the previous interval, {prev.where}, ends at sample {prev.end}); phone "
                                 f"intervals must be contiguous (gaps up to 10 ms, {tolerance} samples, are closed)")
            out[-1] = replace(prev, end=iv.start)
            fixed["gaps of at most 10 ms closed"] += 1
        if iv.end > n_samples:
            if iv.end - n_samples > tolerance or iv.start >= n_samples:
                raise ValueError(f"{path}: {iv.where}: {iv.label!r} runs past the end of the audio (ends at sample "
                                 f"{iv.end}; {n_samples} samples at {sample_rate} Hz{f' in {audio}' if audio else ''})"
                                 f"{rate_hint(intervals[-1].end, n_samples, sample_rate)}")
            iv = replace(iv, end=n_samples)
            fixed["ends at most 10 ms past the audio cut at its end"] += 1
        out.append(iv)
    return out


def to_sample(t: float, sample_rate: int) -> int:
    return int(round(t * sample_rate))


def span(t0: float, t1: float) -> str:
    return f"{t0:.3f}-{t1:.3f} s"


# --- Praat TextGrid ----------------------------------------------------------------------------
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


# --- Kaldi CTM ---------------------------------------------------------------------------------
def write_ctm(path: Path, utterance: str, intervals: list[tuple[float, float, str]]) -> None:
    """A CTM file of one utterance: ``utterance 1 start duration label`` per interval (start s,
    end s, label), times to 0.1 µs (a 16 kHz sample's time exactly: ``read_ctm`` gives the
    samples back)."""
    lines = [f"{utterance} 1 {s:.7f} {e - s:.7f} {lab}\n" for s, e, lab in intervals]
    Path(path).write_text("".join(lines))


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


# --- Buckeye .phones / .words ------------------------------------------------------------------
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


def words_from(intervals: list[Interval], zero_length: list[str] | None, path: Path) -> list[Word]:
    """The words of a word tier: pauses (empty, ``sil``, ``sp``, ``<eps>``; Buckeye's {..} and <..> markers)
    are not words; a zero-length word is left out and named in ``zero_length`` when given."""
    words = []
    for iv in intervals:
        lab = iv.label
        if lab.casefold() in WORD_PAUSES or lab[:1] in "{<":
            continue
        if iv.end == iv.start and zero_length is not None:
            zero_length.append(f"{path}: {iv.where}")
            continue
        words.append(Word(iv.start, iv.end, lab))
    return words


# --- which files, read into segments and words -------------------------------------------------
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
