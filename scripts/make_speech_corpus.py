#!/usr/bin/env python3
"""Generate a phone-aligned speech corpus in TIMIT layout with Festival (and espeak-ng, flite).

Source: the Festival Speech Synthesis System (Black, Taylor & Caley, University of Edinburgh;
Debian packages ``festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts``). Festival
synthesizes each sentence and saves the waveform (``utt.save.wave``) and the Segment relation
with end times (``utt.save.segs``): the phone alignment is exact by construction.

Layout written under ``--out`` (the TIMIT layout that ``vecset.encoders.speech`` reads)::

    <out>/<speaker>/<utt>.wav|.flac   16 kHz mono, 16-bit
    <out>/<speaker>/<utt>.phn         "start_sample end_sample phone", contiguous, covering the file
    <out>/<speaker>/<utt>.wrd         "start_sample end_sample word"
    <out>/<speaker>/<utt>.txt         "0 <n_samples> <sentence>"
    <out>/{train,dev,test}.lst        utterance paths ("<speaker>/<utt>"), speaker-disjoint
    <out>/speakers.tsv, corpus.json   the speaker recipes and the generation settings

Speakers: three base voices (kal and ked: diphone, male; slt: HTS, female). Each speaker is a
base voice with its own tempo (``Duration_Stretch``) and, for the diphone voices, F0 mean
(the HTS voice honours only tempo and writes 32 kHz audio, resampled here to 16 kHz). Most
speakers are also resampled by a factor f in [0.9, 1.1]: reading the waveform as if recorded at
16000*f Hz and resampling to 16 kHz shifts pitch and formants by f and the tempo by 1/f, like
a different vocal tract; every phone boundary is rescaled exactly (t -> t / f).
Per base voice, the speakers go to train, train, dev, test, (train, ...): the splits share no
speaker, and each split hears every base voice (so ``--speakers`` is a multiple of 3, at least 12;
a count of speakers or utterances that leaves a split empty is refused).

Labels: Festival's radio phone set (ARPAbet-like) plus ``pau``; the leading and trailing
``pau`` become ``h#`` (TIMIT's utterance-edge silence). A phone boundary at time t becomes
sample round(t * 16000 / f); the last segment is stretched or clipped to the file's end
(Festival's wave is a few ms longer or shorter than its last segment end), and segments that
round to zero samples are dropped and counted in corpus.json.

Voice families (``--voices``): Festival's ``kal``, ``ked``, ``slt`` (the default, the shipped
sample's recipe), espeak-ng voices ``espeak:<voice>`` (``espeak:en-us``, ``espeak:en-us+f3``,
``espeak:en-us+klatt``: scripts/espeak_synth.py, phone timings from its phoneme events, words
exactly the transcript's) and CMU Flite's ``flite:awb`` and ``flite:rms`` (families ``fliteawb``,
``fliterms``; Debian package ``flite``; scripts/flite_synth.py). flite gives Festival's radio
phones with end times and its words (their segments through the SylStructure relation); they are
labelled by the same code as Festival's (``radio_labels``), and an utterance whose words are not
the sentence's is skipped and counted (``flite_words_differ``). Only awb and rms are offered:
flite's ``slt`` and ``kal``/``kal16`` are the same recorded speakers as Festival's slt and kal, so
a held-out voice would be a speaker the model trained on (``family_of`` refuses them). Speaker i
belongs to family i mod F (``--speakers``: a multiple of F, at least 4 per family); an espeak
speaker has its own rate, pitch and pitch range, a flite speaker its own tempo and (awb only: rms
ignores it) F0 mean, drawn as for the diphone voices, and most are resampled as above.
With ``--train-voices`` / ``--dev-voices`` / ``--test-voices`` the families go to those splits (a
family in several splits cycles its speakers over them, in the order train, train, dev, test); a
test family may not be a train family (an error), so the test voices are voices the model never
heard. Without them every family is in all three splits (in-voice, speaker-disjoint).
``--rotations`` (two or more voice families, each with train and dev speakers; otherwise a
rotation's lists would be empty: not written, and refused when none could be) also writes leave-one-voice-out lists: ``lovo/<family>/{train,dev}.lst`` (the train
and dev speakers of the other families), ``lovo/<family>/dev_unheard.lst`` (the held-out family's
dev speakers: a voice-disjoint dev set for choosing settings), ``lovo/<family>/test.lst`` (the
held-out family's other utterances, never those of its dev speakers) and ``test_in_voice.lst``
(the test speakers of the other families: the in-voice score of the same model). With voices of
two or three synthesizers, ``lovo_synth/<synth>/`` holds the same lists with a whole synthesizer
held out (festival, espeak or flite): a test voice from a synthesizer no training voice comes from.

Determinism: every sentence, speaker and setting is drawn from ``--seed`` before synthesis, and
the synthesizers are deterministic (espeak-ng's and flite's noise generator, the C library's
``rand()``, is reseeded before each utterance), so the files are the same for a given seed and job count (the job count only changes how utterances
are grouped into Festival processes; espeak-ng and flite run in this process, one utterance after
another).

Its parts, beside it: ``corpus_plan.py`` (sentences, speakers, splits, rotations: all drawn before
synthesis), ``corpus_festival.py``, ``corpus_espeak.py``, ``corpus_flite.py`` (one synthesizer each)
and ``corpus_common.py`` (labels and files they share).

Usage:
    python scripts/make_speech_corpus.py --out data/speech_full --utterances 1000 --jobs 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # corpus_*.py, speech_text.py, flite_synth.py beside this file
from corpus_common import SR  # noqa: E402
from corpus_espeak import check_espeak, espeak_version, run_espeak  # noqa: E402
from corpus_festival import check_festival, postprocess, run_festival  # noqa: E402
from corpus_flite import check_flite, run_flite  # noqa: E402
from corpus_plan import (  # noqa: E402
    DEFAULT_VOICES,
    SPLITS,
    Speaker,
    assign_sentences,
    check_rotations,
    check_splits,
    check_written,
    family_splits,
    make_speakers,
    rotations,
    split_stats,
)
from speech_text import (  # noqa: E402
    MAX_WORDS,
    MIN_WORDS,
    WORDNET_DIR,
    filter_sentences,
    wordnet_examples,
)


def generate(out: Path, utterances: int, speakers: int, seed: int, jobs: int, fmt: str,
             install: bool = False, text_dir: Path = WORDNET_DIR, voices: list[str] | tuple[str, ...] = DEFAULT_VOICES,
             train_voices: list[str] | None = None, dev_voices: list[str] | None = None,
             test_voices: list[str] | None = None, write_rotations: bool = False) -> dict:
    if jobs < 1:
        raise SystemExit(f"--jobs must be >= 1, got {jobs}")
    try:
        fam_splits = family_splits(list(voices), train_voices, dev_voices, test_voices)
        spk = make_speakers(speakers, seed, voices, fam_splits)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    check_splits(spk, utterances)  # before Festival: a bad count fails at once
    if write_rotations:  # so does a rotation that would hold out every training voice
        check_rotations(spk, voices)
        if len({s.synth for s in spk}) > 1:
            check_rotations(spk, voices, by="synth")
    if any(s.synth == "festival" for s in spk):
        check_festival(install)
    if any(s.synth == "espeak" for s in spk):
        check_espeak(install)
    if any(s.synth == "flite" for s in spk):
        check_flite(install)
    candidates = wordnet_examples(text_dir)
    pool, filtered = filter_sentences(candidates)
    texts = assign_sentences(pool, utterances, seed)
    # utterance i: speaker i mod S (balanced) and the i-th sentence of the seeded order
    items = [(f"{spk[i % len(spk)].name}__u{i:05d}", spk[i % len(spk)], texts[i]) for i in range(utterances)]
    items.sort(key=lambda t: (t[1].name, t[0]))  # group by speaker: one voice switch per group
    espeak_items = [t for t in items if t[1].synth == "espeak"]
    flite_items = [t for t in items if t[1].synth == "flite"]
    items_all, items = items, [t for t in items if t[1].synth == "festival"]
    per = max(1, math.ceil(len(items) / jobs))
    batches = [items[k:k + per] for k in range(0, len(items), per)]
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="vecset_festival_") as td:
        tmps = []
        for b in range(len(batches)):
            (Path(td) / str(b)).mkdir()
            tmps.append(Path(td) / str(b))
        from vecset.pipelines.console import Bar, track

        with Bar("synthesizing (Festival)", len(items)) as bar, ThreadPoolExecutor(max_workers=jobs) as ex:
            done = ex.map(lambda b, t: run_festival(b, t, bar.advance), batches, tmps)
            failed = {k: r for f in done for k, r in f.items()}
        synth_s = time.time() - t0
        said = [(k, s, t, tmp) for batch, tmp in zip(batches, tmps, strict=True) for k, s, t in batch]
        rows = [{"utt": k.replace("__", "/"), "skipped": failed[k], "text": t} if k in failed
                else postprocess(k, s, t, tmp, out, fmt)
                for k, s, t, tmp in track(said, "aligning and writing")]
    t1 = time.time()
    rows += run_espeak(espeak_items, out, fmt)
    espeak_s = time.time() - t1
    t2 = time.time()
    rows += run_flite(flite_items, out, fmt)  # after espeak: flite reseeds the C library's rand()
    flite_s = time.time() - t2
    items = items_all
    written = [r for r in rows if "skipped" not in r]
    skipped = [r for r in rows if "skipped" in r]
    for r in skipped:
        print(f"skipped {r['utt']} ({r['skipped']}): {r['text']!r}"
              + (f" -> Festival said {r['festival_words']!r}" if "festival_words" in r else "")
              + (f" -> flite said {r['flite_words']!r}" if "flite_words" in r else ""), file=sys.stderr)
    unmapped: Counter = Counter()
    for r in written:
        unmapped.update(r.pop("unmapped", {}))
    split_of = {s.name: s.split for s in spk}
    text_of = {k.replace("__", "/"): t for k, _, t in items}
    lists = {k: sorted(r["utt"] for r in written if split_of[r["utt"].split("/")[0]] == k) for k in SPLITS}
    check_written(lists)
    by_split: dict[str, list[str]] = {}
    for split, lst in lists.items():
        (out / f"{split}.lst").write_text("".join(u + "\n" for u in lst))
        by_split[split] = [text_of[u] for u in lst]
    stats = split_stats(by_split)
    if any(stats[k]["sentences_shared_with_train"] for k in ("dev", "test")):
        raise AssertionError(f"a dev or test sentence is also in train: {stats}")  # cannot happen: one use each
    write_speakers(out / "speakers.tsv", spk)
    rots = rotations(spk, lists) if write_rotations else {}
    # with voices of two or three synthesizers: also leave one synthesizer out (lovo_synth/)
    synth_rots = rotations(spk, lists, by="synth") if write_rotations and len({s.synth for s in spk}) > 1 else {}
    # a rotation with nothing to train or choose on is not written: said here, counted in corpus.json
    skipped_rotations = {}
    for kind, rr, by in (("lovo", rots, "family"), ("lovo_synth", synth_rots, "synth")):
        for h, empty in check_rotations(spk, voices, by=by, lists=rr).items():
            print(f"{kind}/{h} not written: holding it out leaves its {' and '.join(empty)} "
                  f"list{'s' if len(empty) > 1 else ''} empty", flush=True)
            skipped_rotations[f"{kind}/{h}"] = empty
            del rr[h]
    for folder, rr in (("lovo", rots), ("lovo_synth", synth_rots)):
        for fam, rot in rr.items():
            (out / folder / fam).mkdir(parents=True, exist_ok=True)
            for k, v in rot.items():
                (out / folder / fam / f"{k}.lst").write_text("".join(u + "\n" for u in v))
    total = sum(r["samples"] for r in written)
    info = {
        "generator": "scripts/make_speech_corpus.py",
        "festival": subprocess.run(["festival", "--version"], capture_output=True, text=True).stdout.strip()
        if shutil.which("festival") else None,
        "seed": seed, "jobs": jobs, "utterances_requested": utterances, "utterances": len(written),
        "speakers": [s.recipe() for s in spk],
        "text": {"source": "WordNet 3.0 example sentences (Debian package wordnet-base)",
                 "licence": "WordNet 3.0 licence (Princeton University; BSD-style, redistribution permitted "
                            "with the copyright notice)",
                 "files": [str(text_dir / f) for f in ("data.adj", "data.adv", "data.noun", "data.verb")],
                 "words_per_sentence": [MIN_WORDS, MAX_WORDS], "candidates": len(candidates),
                 "filter": dict(filtered), "sentences_kept": len(pool)},
        "skipped_utterances": dict(sorted(Counter(r["skipped"] for r in skipped).items())),
        "splits": stats,
        "format": fmt, "sample_rate": SR, "hours": round(total / SR / 3600, 4),
        "mean_seconds": round(total / SR / max(1, len(written)), 3),
        "dropped_zero_length_segments": sum(r["dropped_segments"] for r in written),
        "dropped_zero_length_words": sum(r["dropped_words"] for r in written),
        "synthesis_seconds": round(synth_s, 1),
    }
    if list(voices) != list(DEFAULT_VOICES) or any(v != list(SPLITS) for v in fam_splits.values()):
        info["voices"] = {"families": {f: {"splits": v, "speakers": [s.name for s in spk if s.family == f]}
                                       for f, v in fam_splits.items()},
                          "rotations": {f: {k: len(v) for k, v in r.items()} for f, r in rots.items()},
                          "synth_rotations": {f: {k: len(v) for k, v in r.items()} for f, r in synth_rots.items()},
                          "rotations_not_written": skipped_rotations}
    if espeak_items:
        info["espeak"] = {"version": espeak_version(), "utterances": len(espeak_items),
                          "skipped": dict(Counter(r["skipped"] for r in skipped if r["skipped"].startswith("espeak"))),
                          "unmappable_phonemes": dict(unmapped.most_common()),
                          "synthesis_seconds": round(espeak_s, 1)}
    if flite_items:
        import flite_synth

        info["flite"] = {"version": flite_synth.version(), "utterances": len(flite_items),
                         "skipped": dict(Counter(r["skipped"] for r in skipped if r["skipped"].startswith("flite"))),
                         "synthesis_seconds": round(flite_s, 1)}
    (out / "corpus.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def write_speakers(path: Path, spk: list[Speaker]) -> None:
    """speakers.tsv: one row per speaker, its voice family and synthesizer settings."""
    with open(path, "w") as f:
        f.write("name\tfamily\tsynth\tvoice\tsplit\tduration_stretch\tf0_mean\trate\tpitch\tpitch_range\tresample\n")
        for s in spk:
            f.write(f"{s.name}\t{s.family}\t{s.synth}\t{s.voice}\t{s.split}\t{s.stretch}\t{s.f0_mean or ''}\t"
                    f"{s.rate or ''}\t{s.pitch or ''}\t{s.pitch_range or ''}\t{s.resample}\n")


def digest(root: Path) -> str:
    """One sha256 over every corpus file (paths and bytes), to check determinism."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name != "corpus.json":
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="output root (TIMIT layout)")
    ap.add_argument("--utterances", type=int, default=1000)
    ap.add_argument("--speakers", type=int, default=15,
                    help="a multiple of the number of voice families, at least 4 per family (train, train, dev, test)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2, help="parallel Festival processes")
    ap.add_argument("--format", choices=["wav", "flac"], default="wav")
    ap.add_argument("--text-dir", type=Path, default=WORDNET_DIR, help="WordNet's data.{adj,adv,noun,verb}")
    ap.add_argument("--install", action="store_true",
                    help="apt-get install the Festival, espeak-ng or flite packages when missing (needs root)")
    ap.add_argument("--force", action="store_true", help="write into a non-empty --out")
    ap.add_argument("--voices", default=",".join(DEFAULT_VOICES),
                    help="comma-separated voice families: kal, ked, slt (Festival), espeak:<voice> (espeak-ng), "
                         "flite:awb, flite:rms (flite)")
    for k in SPLITS:
        ap.add_argument(f"--{k}-voices", default=None, help=f"families whose speakers go to {k} (comma-separated)")
    ap.add_argument("--rotations", action="store_true", help="also write leave-one-voice-out lists under lovo/ (and lovo_synth/)")
    a = ap.parse_args(argv)
    def csv(v):
        return None if v is None else [x for x in v.split(",") if x]
    if a.out.exists() and any(not p.name.startswith(".") for p in a.out.iterdir()):  # a shipped .gitignore is fine
        if not a.force:
            raise SystemExit(f"{a.out} is not empty; pass --force to overwrite or choose another --out")
        if not (a.out / "corpus.json").exists():
            raise SystemExit(f"{a.out} holds no corpus.json: not a corpus this script wrote; not overwriting it")
        # remove only what an earlier run wrote, so no stale utterance survives
        for p in a.out.iterdir():
            if p.is_dir() and (re.fullmatch(r"s\d{2,}[a-z0-9]+", p.name) or p.name in ("lovo", "lovo_synth")):
                shutil.rmtree(p)
            elif p.name in ("train.lst", "dev.lst", "test.lst", "speakers.tsv", "corpus.json"):
                p.unlink()
    info = generate(a.out, a.utterances, a.speakers, a.seed, a.jobs, a.format, a.install, a.text_dir,
                    tuple(csv(a.voices)), csv(a.train_voices), csv(a.dev_voices), csv(a.test_voices), a.rotations)
    # Festival's seconds, and espeak-ng's and flite's (theirs include resampling and writing)
    synth_s = info["synthesis_seconds"] + sum(info[k]["synthesis_seconds"] for k in ("espeak", "flite") if k in info)
    print(f"wrote {info['utterances']} of {a.utterances} utterances ({info['hours']} h, mean {info['mean_seconds']} s) from "
          f"{a.speakers} speakers to {a.out} in {synth_s:.1f} s of synthesis; "
          f"sha256 {digest(a.out)[:16]}")


if __name__ == "__main__":
    main()
