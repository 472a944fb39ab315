"""Phone and word alignments in the formats real speech comes in, beside TIMIT's ``.phn``/``.wrd``:

- ``textgrid``: Praat TextGrid (long or short text format; the Montreal Forced Aligner writes
  one per utterance with a ``phones`` and a ``words`` interval tier), parsed by ``praatio``;
- ``ctm``: Kaldi CTM, one file for many utterances (``utterance channel start duration label
  [confidence]`` per line); a phone CTM and optionally a word CTM, the utterance id being the
  audio file's stem;
- ``buckeye``: the Buckeye corpus's ``.phones`` (and ``.words``): a header ending in ``#``, then
  ``end_time color label`` per line, each segment starting where the previous one ended.

Each format's reader has its module (``alignment_textgrid.py``, ``alignment_ctm.py``,
``alignment_buckeye.py``); ``alignment_reader.py`` finds an utterance's file and reads it; this
module holds what they share: intervals, their checks, the label mapping, the words of a tier.

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

from vecset.encoders.speech.alignment import Segment, rate_hint
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

