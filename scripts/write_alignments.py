#!/usr/bin/env python3
"""Write a TIMIT-layout corpus's alignments (.phn, .wrd) in the other formats the speech reader
reads: Praat TextGrid (as the Montreal Forced Aligner writes them), Kaldi CTM, Buckeye .phones /
.words. The reader reads them back to the same samples and frame labels (tests/scripts/
test_write_alignments.py), and a real corpus's alignments can be converted for other tools.

Usage::

    python scripts/write_alignments.py data/speech /tmp/speech_tg --format textgrid [--labels mfa]
    python scripts/write_alignments.py data/speech /tmp/speech_ctm --format ctm

``<out>`` gets a copy of the corpus's layout: each audio file linked (or copied with --copy), its
.txt copied, and its alignment in the chosen format instead of the .phn/.wrd (the split lists
are copied too); a CTM goes to ``<out>/phones.ctm`` and ``<out>/words.ctm``, utterance id = the
audio file's stem. Times are seconds, written with enough digits that ``round(t * rate)`` gives
back the sample. ``--labels mfa`` writes phones as MFA does: ARPAbet in capitals with a stress
digit on vowels (``ax`` as ``AH0``, other vowels with 1) and silences (h#, pau) as empty
intervals in a TextGrid, ``sil`` elsewhere; ``--labels same`` (default) keeps the .phn's labels.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vecset.encoders.speech import find_companion, read_phn, read_wrd  # noqa: E402
from vecset.pipelines.speech.files import scan_audio  # noqa: E402

FORMATS = ("textgrid", "textgrid-short", "ctm", "buckeye")
VOWELS = set("aa ae ah ao aw ax axr ay eh el em en er ey ih ix iy ow oy uh uw ux".split())
SILENCES = {"h#", "pau", "brth", "epi"}


def mfa_label(phone: str, silence: str) -> str:
    """A .phn phone as MFA writes it: silences as ``silence``, ARPAbet capitals with stress."""
    if phone in SILENCES:
        return silence
    if phone == "ax":
        return "AH0"
    return phone.upper() + ("1" if phone in VOWELS else "")


def seconds(sample: int, rate: int) -> str:
    """Sample -> seconds, with digits enough that round(t * rate) is the sample again."""
    return repr(sample / rate)


def alignment_of(audio: Path, labels: str, silence: str) -> tuple[int, list[tuple[int, int, str]], list]:
    """(audio rate, phone segments (start, end, label), words) of ``audio``'s .phn and .wrd."""
    info = sf.info(str(audio))
    rate, n = info.samplerate, info.frames
    segs = read_phn(audio.with_suffix(".phn"), n, sample_rate=rate, audio=audio)
    phones = [(s.start, s.end, mfa_label(s.phone, silence) if labels == "mfa" else s.phone) for s in segs]
    wrd = find_companion(audio, ".wrd")
    words = [(w.start, w.end, w.word) for w in read_wrd(wrd, [])] if wrd is not None else []
    return rate, phones, words


def write_textgrid(path: Path, rate: int, n: int, phones: list, words: list, short: bool) -> None:
    from praatio import textgrid
    from praatio.data_classes.interval_tier import IntervalTier

    end = n / rate
    tg = textgrid.Textgrid()
    # praatio leaves out empty intervals it is given; includeBlankSpaces fills the gaps as empty
    tg.addTier(IntervalTier("words", [(s / rate, e / rate, w) for s, e, w in words], 0, end))
    tg.addTier(IntervalTier("phones", [(s / rate, e / rate, p) for s, e, p in phones if p], 0, end))
    tg.save(str(path), format="short_textgrid" if short else "long_textgrid", includeBlankSpaces=True,
            minimumIntervalLength=None)


def write_buckeye(path: Path, rate: int, rows: list, start_marker: str) -> None:
    """``end color label`` lines after a header; a stretch before the first row or between rows
    is written as ``start_marker`` (no phone) so each row starts where the previous ended."""
    lines = ["signal " + path.stem, "type 0", "color 121", "comment written by vecset scripts/write_alignments.py",
             "separator ;", "nfields 1", "#"]
    prev = 0
    for s, e, lab in rows:
        if s > prev:
            lines.append(f"    {seconds(s, rate)}  121 {start_marker}")
        lines.append(f"    {seconds(e, rate)}  121 {lab}")
        prev = e
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="a TIMIT-layout corpus (audio + .phn [+ .wrd, .txt])")
    ap.add_argument("out", type=Path)
    ap.add_argument("--format", choices=FORMATS, required=True)
    ap.add_argument("--labels", choices=("same", "mfa"), default="same")
    ap.add_argument("--copy", action="store_true", help="copy the audio files instead of linking them")
    args = ap.parse_args(argv)
    root, out = args.root.resolve(), args.out
    out.mkdir(parents=True, exist_ok=True)
    ctm_phones, ctm_words = [], []
    files = scan_audio(root)
    for audio in files:
        rel = audio.relative_to(root)
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if not dst.exists():
            shutil.copyfile(audio, dst) if args.copy else dst.symlink_to(audio)
        if (txt := find_companion(audio, ".txt")) is not None:
            shutil.copyfile(txt, dst.with_suffix(".txt"))
        silence = "" if args.format.startswith("textgrid") else "sil"
        rate, phones, words = alignment_of(audio, args.labels, silence)
        n = sf.info(str(audio)).frames
        if args.format.startswith("textgrid"):
            write_textgrid(dst.with_suffix(".TextGrid"), rate, n, phones, words, short=args.format == "textgrid-short")
        elif args.format == "ctm":
            ctm_phones += [f"{audio.stem} 1 {seconds(s, rate)} {seconds(e - s, rate)} {p}" for s, e, p in phones]
            ctm_words += [f"{audio.stem} 1 {seconds(s, rate)} {seconds(e - s, rate)} {w}" for s, e, w in words]
        else:
            write_buckeye(dst.with_suffix(".phones"), rate, phones, "{B_TRANS}")
            if words:
                write_buckeye(dst.with_suffix(".words"), rate, [(s, e, f"{w}; ; ; ") for s, e, w in words],
                              "<SIL>; ; ; ")
    if args.format == "ctm":
        (out / "phones.ctm").write_text("\n".join(ctm_phones) + "\n")
        (out / "words.ctm").write_text("\n".join(ctm_words) + "\n")
    for lst in root.glob("*.lst"):
        shutil.copyfile(lst, out / lst.name)
    print(f"{out}: {len(files)} utterances' alignments written as {args.format} (labels: {args.labels})")


if __name__ == "__main__":
    main()
