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

Usage:
    python scripts/make_speech_corpus.py --out data/speech_full --utterances 1000 --jobs 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))  # speech_text.py, flite_synth.py beside this file
from flite_synth import LEAKING as FLITE_LEAKING  # noqa: E402
from flite_synth import VOICES as FLITE_VOICES  # noqa: E402
from speech_text import (  # noqa: E402
    MAX_WORDS,
    MIN_WORDS,
    WORDNET_DIR,
    filter_sentences,
    wordnet_examples,
    words_of,
)

SR = 16000
PACKAGES = ["festival", "festvox-kallpc16k", "festvox-kdlpc16k", "festvox-us-slt-hts", "wordnet-base"]
VOICES = {  # base voice -> (Festival voice function, diphone voice that takes an F0 mean)
    "kal": ("voice_kal_diphone", True),
    "ked": ("voice_ked_diphone", True),
    "slt": ("voice_cmu_us_slt_arctic_hts", False),
}

# --- sentences: WordNet's examples (scripts/speech_text.py), each used by one utterance only ----
def assign_sentences(pool: list[str], utterances: int, seed: int) -> list[str]:
    """Utterance i's sentence: the i-th of the pool shuffled by ``seed``. Every sentence is used
    once, so the splits share no sentence (the pool holds no two sentences with the same words),
    and a smaller corpus is a prefix of a larger one with the same seed."""
    if utterances > len(pool):
        raise SystemExit(f"--utterances {utterances} exceeds the {len(pool)} distinct sentences the filter kept")
    order = list(range(len(pool)))
    random.Random(f"{seed}:sentences").shuffle(order)
    return [pool[k] for k in order[:utterances]]


def split_stats(texts: dict[str, list[str]]) -> dict:
    """Per split: utterances, word tokens, distinct words; for dev and test also the tokens and
    distinct words unseen in train, and the sentences shared with train (0 by construction).

    Args:
        texts: split -> the sentences of its utterances.
    """
    words = {k: [w for t in v for w in words_of(t)] for k, v in texts.items()}
    train_vocab = set(words.get("train", []))
    train_sents = {tuple(words_of(t)) for t in texts.get("train", [])}
    out = {}
    for k, v in texts.items():
        row = {"utterances": len(v), "word_tokens": len(words[k]), "distinct_words": len(set(words[k]))}
        if k != "train":
            unseen = [w for w in words[k] if w not in train_vocab]
            row.update(unseen_tokens=len(unseen), unseen_token_share=round(len(unseen) / max(1, len(words[k])), 4),
                       unseen_distinct_words=len(set(unseen)),
                       sentences_shared_with_train=sum(tuple(words_of(t)) in train_sents for t in v))
        out[k] = row
    return out


# --- speakers ------------------------------------------------------------------------------
@dataclass
class Speaker:
    name: str
    voice: str
    split: str
    stretch: float  # Festival Duration_Stretch, flite duration_stretch (> 1 slower)
    f0_mean: float | None  # target F0 mean in Hz (Festival's diphone voices and flite's awb only)
    resample: float  # 1.0 = as synthesized; f shifts pitch/formants by f and tempo by 1/f
    family: str = ""  # voice family: kal, ked, slt, the espeak voice's tag (enusf3), fliteawb
    synth: str = "festival"  # festival, espeak or flite
    rate: int | None = None  # espeak words per minute
    pitch: int | None = None  # espeak pitch (0-100)
    pitch_range: int | None = None  # espeak pitch range (0-100)

    def recipe(self) -> dict:
        """The fields that describe a Festival speaker (what corpus.json's speakers held before
        voice families): the shipped sample's recipe, unchanged."""
        d = asdict(self)
        if self.synth == "festival":
            for k in ("family", "synth", "rate", "pitch", "pitch_range"):
                d.pop(k)
        return d


SPLIT_CYCLE = ["train", "train", "dev", "test"]


SPLITS = ("train", "dev", "test")


DEFAULT_VOICES = ("kal", "ked", "slt")


def family_of(spec: str) -> str:
    """``kal`` -> ``kal``; ``espeak:en-us+f3`` -> ``enusf3`` (letters and digits of the voice);
    ``flite:awb`` -> ``fliteawb``. Refuses flite's slt, kal and kal16: the speakers of Festival's
    slt and kal (scripts/flite_synth.py)."""
    if spec in VOICES:
        return spec
    if spec.startswith("espeak:") and len(spec) > 7:
        return re.sub(r"[^a-z0-9]", "", spec[7:].lower())
    if spec.startswith("flite:"):
        v = spec[6:]
        if v in FLITE_LEAKING:
            raise ValueError(
                f"voice {spec!r}: flite's {v} is the same recorded speaker as Festival's {FLITE_LEAKING[v]}, so a "
                f"model trained on Festival's {FLITE_LEAKING[v]} would be tested on a speaker it has heard (and one "
                f"trained on flite:{v} would have heard Festival's): use flite:{' or flite:'.join(FLITE_VOICES)}")
        if v in FLITE_VOICES:
            return "flite" + v
        raise ValueError(f"voice {spec!r}: flite voices offered are {', '.join('flite:' + x for x in FLITE_VOICES)}")
    raise ValueError(f"voice {spec!r}: expected one of {', '.join(VOICES)} (Festival), espeak:<voice> "
                     "(espeak-ng --voices=en lists them; a variant as en-us+f3) or "
                     f"{', '.join('flite:' + x for x in FLITE_VOICES)} (flite)")


def family_splits(voices: list[str], train: list[str] | None = None, dev: list[str] | None = None,
                  test: list[str] | None = None) -> dict[str, list[str]]:
    """family -> the splits its speakers cycle over. Without any split list every family is in all
    three; otherwise each family must be in at least one, and no test family in train."""
    fams = [family_of(v) for v in voices]
    if len(set(fams)) != len(fams):
        raise ValueError(f"--voices names a voice family twice: {voices}")
    if train is None and dev is None and test is None:
        return {f: list(SPLITS) for f in fams}
    lists = {"train": [family_of(v) for v in train or []], "dev": [family_of(v) for v in dev or []],
             "test": [family_of(v) for v in test or []]}
    for k, v in lists.items():
        if not v:
            raise ValueError(f"--{k}-voices is empty: give every split at least one voice family")
        unknown = sorted(set(v) - set(fams))
        if unknown:
            raise ValueError(f"--{k}-voices names {', '.join(unknown)}, not in --voices ({', '.join(fams)})")
    both = sorted(set(lists["train"]) & set(lists["test"]))
    if both:
        raise ValueError(f"voice famil{'ies' if len(both) > 1 else 'y'} {', '.join(both)} in both --train-voices and "
                         "--test-voices: the test voices must be voices the model never heard")
    out = {f: [k for k in SPLITS if f in lists[k]] for f in fams}
    unused = [f for f, v in out.items() if not v]
    if unused:
        raise ValueError(f"voice famil{'ies' if len(unused) > 1 else 'y'} {', '.join(unused)} in no split: "
                         "list it in --train-voices, --dev-voices or --test-voices, or leave it out of --voices")
    return out


def make_speakers(n: int, seed: int, voices: list[str] | tuple[str, ...] = DEFAULT_VOICES,
                  splits: dict[str, list[str]] | None = None) -> list[Speaker]:
    """Speaker i: family i mod F, its j-th speaker (j = i // F) going to the j-th split of the
    family's cycle (SPLIT_CYCLE filtered to the family's splits, then train where it has it)."""
    voices = list(voices)
    nf = len(voices)
    splits = splits or family_splits(voices)
    # 4 per base voice: the cycle reaches test at a voice's 4th speaker (9 speakers gave no test)
    need = max(len([k for k in SPLIT_CYCLE if k in v]) for v in splits.values())
    if n < nf * need or n % nf:
        raise ValueError(f"--speakers must be a multiple of {nf} and at least {nf * need} (per base voice "
                         f"the speakers go {', '.join(SPLIT_CYCLE)}, so train/dev/test each hear every voice), got {n}")
    speakers = []
    for i in range(n):
        spec = voices[i % nf]
        fam = family_of(spec)
        cycle = [k for k in SPLIT_CYCLE if k in splits[fam]]
        j = i // nf  # this voice's j-th speaker
        split = cycle[j] if j < len(cycle) else ("train" if "train" in cycle else cycle[j % len(cycle)])
        r = random.Random(f"{seed}:speaker:{i}")
        if spec in VOICES:
            diphone = VOICES[spec][1]
            speakers.append(Speaker(
                name=f"s{i:02d}{spec}", voice=spec, split=split,
                stretch=round(r.uniform(0.85, 1.2), 3),
                f0_mean=round(r.uniform(85.0, 145.0), 1) if diphone else None,
                resample=1.0 if j == 0 else round(r.uniform(0.9, 1.1), 3),
                family=fam))
        elif spec.startswith("flite:"):  # tempo and F0 as Festival's diphone voices (rms: tempo only)
            speakers.append(Speaker(
                name=f"s{i:02d}{fam}", voice=spec[6:], split=split,
                stretch=round(r.uniform(0.85, 1.2), 3),
                f0_mean=round(r.uniform(85.0, 145.0), 1) if FLITE_VOICES[spec[6:]] else None,
                resample=1.0 if j == 0 else round(r.uniform(0.9, 1.1), 3), family=fam, synth="flite"))
        else:
            speakers.append(Speaker(
                name=f"s{i:02d}{fam}", voice=spec[7:], split=split, stretch=1.0, f0_mean=None,
                resample=1.0 if j == 0 else round(r.uniform(0.9, 1.1), 3), family=fam, synth="espeak",
                rate=r.randint(140, 200), pitch=r.randint(25, 75), pitch_range=r.randint(30, 90)))
    empty = [k for k in SPLITS if not any(s.split == k for s in speakers)]
    if empty:
        raise ValueError(f"--speakers {n} leaves {', '.join(empty)} without a speaker")
    return speakers


def rotations(speakers: list[Speaker], lists: dict[str, list[str]],
              by: str = "family") -> dict[str, dict[str, list[str]]]:
    """Leave-one-out lists per voice family (``by="family"``) or per synthesizer (``"synth"``)
    (module docstring): train/dev of the others; of the held-out one, dev_unheard (its dev
    speakers, for choosing settings; left out when it has none) and test (its other utterances);
    test_in_voice of the others."""
    fam = {s.name: getattr(s, by) for s in speakers}
    every = sorted(u for v in lists.values() for u in v)
    dev = set(lists["dev"])
    out = {}
    for f in dict.fromkeys(fam.values()):
        other = {k: [u for u in v if fam[u.split("/")[0]] != f] for k, v in lists.items()}
        held = [u for u in every if fam[u.split("/")[0]] == f]
        out[f] = {"train": other["train"], "dev": other["dev"], "test_in_voice": other["test"],
                  "test": [u for u in held if u not in dev]}
        if any(u in dev for u in held):
            out[f]["dev_unheard"] = [u for u in held if u in dev]
    return out


def check_splits(speakers: list[Speaker], utterances: int) -> dict[str, int]:
    """Utterances per split (utterance i goes to speaker i mod S); refuses a count that leaves a
    split empty, before any synthesis."""
    counts = dict.fromkeys(SPLITS, 0)
    for i in range(utterances):
        counts[speakers[i % len(speakers)].split] += 1
    empty = [k for k in SPLITS if not counts[k]]
    if empty:
        # the smallest count reaching every split: one past the first speaker of the latest split
        need = 1 + max(min(i for i, s in enumerate(speakers) if s.split == k) for k in SPLITS)
        raise SystemExit(f"--utterances {utterances} with {len(speakers)} speakers leaves the {', '.join(empty)} "
                         f"split{'s' if len(empty) > 1 else ''} empty (utterance i goes to speaker i mod "
                         f"{len(speakers)}): use at least {need}")
    return counts


def check_rotations(speakers: list[Speaker], voices: list[str] | tuple[str, ...], by: str = "family",
                    lists: dict[str, dict[str, list[str]]] | None = None) -> dict[str, list[str]]:
    """The leave-one-out rotations whose train or dev list would be empty ({held out: the empty
    lists}), which are not written (a voice-disjoint corpus whose other families are all test-only
    has none to hold out); when no rotation could be written, ``--rotations`` is refused. Before
    synthesis from the speakers (``lists`` None), after it from the written lists (the
    synthesizers' skips). A fit on an empty list would fail far from its cause (Lightning's
    "num_samples=0")."""
    what = "voice family" if by == "family" else "synthesizer"
    if lists is None:
        lists = {}
        for h in dict.fromkeys(getattr(s, by) for s in speakers):
            other = {s.split for s in speakers if getattr(s, by) != h}
            lists[h] = {k: [k] if k in other else [] for k in ("train", "dev")}
    # a test-only or dev-only family has no test list
    empty = {h: [k for k in ("train", "dev") if not rot[k]] for h, rot in lists.items()}
    empty = {h: e for h, e in empty.items() if e}
    if lists and len(empty) == len(lists):
        h, e = next(iter(empty.items()))
        raise SystemExit(
            f"--rotations with --voices {','.join(voices)}: holding out the {what} {h} leaves its "
            f"{' and '.join(e)} list{'s' if len(e) > 1 else ''} empty (no other {what} has a speaker "
            f"there{', and so does every other rotation' if len(lists) > 1 else f': {h} is the only one'}); give "
            "--voices two or more voice families, each with train and dev speakers, or leave out --rotations")
    return empty


def check_written(lists: dict[str, list[str]]) -> None:
    """Refuses a corpus in which the synthesizers' skips left a split without an utterance."""
    empty = [k for k in SPLITS if not lists[k]]
    if empty:
        raise SystemExit(f"no utterance of the {', '.join(empty)} split was written (the synthesizers skipped all of "
                         f"its speakers' utterances; see the 'skipped' lines above): use more --utterances")


# --- Festival --------------------------------------------------------------------------------
def check_festival(install: bool) -> None:
    voices = Path("/usr/share/festival/voices")
    missing = [p for p, ok in [
        ("festival", shutil.which("festival") is not None),
        ("festvox-kallpc16k", (voices / "english/kal_diphone").exists()),
        ("festvox-kdlpc16k", (voices / "english/ked_diphone").exists()),
        ("festvox-us-slt-hts", (voices / "us/cmu_us_slt_arctic_hts").exists()),
        ("wordnet-base", (WORDNET_DIR / "data.noun").exists()),
    ] if not ok]
    if missing:
        install_or_exit(PACKAGES, install, f"Festival, its voices or the WordNet text are missing ({', '.join(missing)})")


def install_or_exit(packages: list[str], install: bool, what: str) -> None:
    """Installs the Debian ``packages`` (with ``--install``, as root where apt-get is), else
    stops with ``what`` and the command that installs them."""
    import os

    if install and os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"installing Debian packages: {' '.join(packages)}", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", *packages], check=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        return
    raise SystemExit(f"{what}. Install them with:\n  sudo apt-get install {' '.join(packages)}")


def scheme_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


SCHEME_HELPERS = """
(define (vs_synth txt stem)
  ;; an error (SIOD ERROR) in one sentence writes <stem>.failed and the batch goes on
  (unwind-protect (vs_synth_1 txt stem)
    (let ((fd (fopen (string-append stem ".failed") "w"))) (fclose fd))))
(define (vs_synth_1 txt stem)
  ;; (Utterance Text txt) does not evaluate txt: build the call with eval
  (set! u (eval (list 'Utterance 'Text txt)))
  (utt.synth u)
  (utt.save.wave u (string-append stem ".wav") 'riff)
  (utt.save.segs u (string-append stem ".segs"))
  (set! fd (fopen (string-append stem ".words") "w"))
  (mapcar (lambda (w)
    (format fd "%s %s %s\\n"
      (item.feat w "R:SylStructure.daughter1.daughter1.segment_start")
      (item.feat w "R:SylStructure.daughtern.daughtern.end")
      (item.name w)))
    (utt.relation.items u 'Word))
  (fclose fd)
  (fclose (fopen (string-append stem ".done") "w")))  ; written last: this utterance is complete
"""


def festival_script(jobs: list[tuple[str, Speaker, str]], tmp: Path) -> str:
    """One Scheme batch: for each speaker group, select the voice, set tempo and F0, synthesize."""
    lines = [SCHEME_HELPERS]
    current = None
    for key, spk, text in jobs:
        if spk.name != current:
            current = spk.name
            fn, diphone = VOICES[spk.voice]
            lines.append(f"({fn})")  # selecting a voice resets its parameters: set them after
            lines.append(f"(Parameter.set 'Duration_Stretch {spk.stretch})")
            if diphone:
                lines.append(f"(set! int_lr_params '((target_f0_mean {spk.f0_mean}) (target_f0_std 14) "
                             f"(model_f0_mean 170) (model_f0_std 34)))")
        lines.append(f"(vs_synth {scheme_str(text)} {scheme_str(str(tmp / key))})")
    return "\n".join(lines) + "\n"


def run_festival(batch: list[tuple[str, Speaker, str]], tmp: Path,
                 advance: Callable[[int], None] | None = None) -> dict[str, str]:
    """Synthesize a batch; returns the utterances Festival could not say, key -> reason.

    A SIOD error in one sentence is caught in Scheme (``<key>.failed``, reason
    ``festival_error``). Festival crashes (a segmentation fault) on some input, e.g. text without
    a single word: the first utterance without audio is then the one it died on (it synthesizes
    in order); it is counted (``festival_crashed``) and the rest of the batch runs again.
    ``advance(n)`` is told of every n utterances finished (said or not), as Festival goes."""
    failed: dict[str, str] = {}
    todo = list(batch)
    reported = 0

    def report() -> None:
        nonlocal reported
        if advance is None:
            return
        finished = sum(k in failed or (tmp / f"{k}.done").exists() or (tmp / f"{k}.failed").exists()
                       for k, _, _ in batch)
        if finished > reported:
            advance(finished - reported)
            reported = finished

    while todo:
        script = tmp / "batch.scm"
        script.write_text(festival_script(todo, tmp))
        proc = subprocess.Popen(["festival", "-b", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        while True:  # the files Festival writes, counted every second while it runs
            try:
                stdout, stderr = proc.communicate(timeout=1)
                break
            except subprocess.TimeoutExpired:
                report()
        res = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        for k, _, _ in todo:
            if (tmp / f"{k}.failed").exists():
                failed[k] = "festival_error"
        missing = [i for i, (k, _, _) in enumerate(todo) if k not in failed and not (tmp / f"{k}.done").exists()]
        if not missing:
            report()
            return failed
        if res.returncode == 0:
            raise RuntimeError(f"Festival exited 0 on {script} but wrote no audio for {len(missing)} utterances "
                               f"(first {todo[missing[0]][0]}):\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
        failed[todo[missing[0]][0]] = "festival_crashed"
        todo = todo[missing[0] + 1:]
    report()
    return failed


# --- post-processing ------------------------------------------------------------------------
def read_segs(path: Path) -> list[tuple[float, str]]:
    """Festival's ``utt.save.segs``: a '#' line, then 'end_time 100 phone' per segment."""
    out = []
    started = False
    for line in path.read_text().splitlines():
        if line.strip() == "#":
            started = True
            continue
        if started and line.strip():
            t, _, ph = line.split()
            out.append((float(t), ph))
    if not out:
        raise RuntimeError(f"{path}: no segments")
    return out


def resample(wav: np.ndarray, orig: int, new: int) -> np.ndarray:
    import torch
    import torchaudio.functional as AF
    if orig == new:
        return wav
    return AF.resample(torch.from_numpy(wav).float()[None], orig, new)[0].numpy()


def merge_clitics(words: list[list[str]]) -> list[tuple[str, str, str]]:
    """Festival's (start, end, name) words with a possessive split off (``John`` ``'s``) joined
    back into one word (``John's``), as the text and TIMIT's .wrd have it. Festival puts the
    clitic's phone into the preceding word's last syllable and gives the clitic itself no
    syllable (times ``0 0``): the joined word keeps the later of the two ends."""
    out: list[tuple[str, str, str]] = []
    for s, e, w in words:
        if w.startswith("'") and out:
            end = e if float(e) > float(out[-1][1]) else out[-1][1]
            out[-1] = (out[-1][0], end, out[-1][2] + w)
        else:
            out.append((s, e, w))
    return out


def words_differ(said: list[str], text: str) -> bool:
    """Whether a synthesizer's words (Festival's, flite's: lower case, apostrophes kept or
    dropped) are not the sentence's words."""
    return [w.lower().replace("'", "") for w in said] != [w.replace("'", "") for w in words_of(text)]


def postprocess(key: str, spk: Speaker, text: str, tmp: Path, out: Path, fmt: str) -> dict:
    """Festival's wave, segments and words -> the TIMIT-layout files of one utterance. Returns
    ``{"utt", "samples", "dropped_segments", "dropped_words"}``, or ``{"utt", "skipped": reason}``
    when Festival's words are not the sentence's words (it read something as an abbreviation or
    number): the utterance is not written, and the reason is counted."""
    said = merge_clitics([line.split() for line in (tmp / f"{key}.words").read_text().splitlines()])
    if words_differ([w for _, _, w in said], text):
        return {"utt": key.replace("__", "/"), "skipped": "festival_words_differ", "text": text,
                "festival_words": " ".join(w for _, _, w in said)}
    wav, sr = sf.read(tmp / f"{key}.wav", dtype="float32")
    if wav.ndim > 1:
        wav = wav.mean(axis=1)
    # HTS writes 32 kHz; the resample factor f reads the 16 kHz wave as if it were 16000*f Hz
    wav = resample(wav, sr, SR)
    if spk.resample != 1.0:
        wav = resample(wav, int(round(SR * spk.resample)), SR)
    phn, words, dropped, dropped_words = radio_labels(read_segs(tmp / f"{key}.segs"), said, text, len(wav),
                                                      spk.resample)
    return write_utterance(out, spk, key.split("__")[1], wav, phn, words, text, fmt,
                           {"dropped_segments": dropped, "dropped_words": dropped_words})


def radio_labels(segs: list[tuple[float, str]], said: list, text: str, n: int,
                 factor: float) -> tuple[list[list], list[tuple[int, int, str]], int, int]:
    """Segments in Festival's radio phone set (Festival's and flite's) -> the .phn and .wrd rows
    of a wave of ``n`` samples at 16 kHz read at 16000*``factor`` Hz (module docstring: a time t
    is sample round(t * 16000 / factor), the last segment ends at ``n``, zero-length segments
    dropped, the edge pauses ``h#``); ``said``: the synthesizer's (start, end, word) in seconds,
    one per word of ``text`` (whose spelling .wrd keeps), snapped to the phone boundaries.
    Returns (phn, words, dropped segments, dropped words)."""
    phones = [ph for _, ph in segs]
    ends = [min(n, int(round(t * SR / factor))) for t, _ in segs]
    ends[-1] = n  # the wave runs a few ms past (or short of) the last segment end
    phn, start, dropped = [], 0, 0
    for e, ph in zip(ends, phones, strict=False):
        if e <= start:  # rounds to zero samples (or was clipped at the file end)
            dropped += 1
            continue
        phn.append([start, e, ph])
        start = e
    phn[-1][1] = n
    if phn[0][2] == "pau":
        phn[0][2] = "h#"
    if phn[-1][2] == "pau":
        phn[-1][2] = "h#"
    words, dropped_words = [], 0
    bounds = [0] + [e for _, e, _ in phn]
    for (s, e, _), w in zip(said, words_of(text), strict=True):  # the text's spelling: dogs', ma'am
        # snap to the nearest phone boundary: the word times carry more digits than the segs
        s_, e_ = (min(bounds, key=lambda b: abs(b - float(t) * SR / factor)) for t in (s, e))
        if e_ > s_:
            words.append((s_, e_, w))
        else:  # shorter than half a phone: no span of its own
            dropped_words += 1
    return phn, words, dropped, dropped_words


def write_utterance(out: Path, spk: Speaker, stem: str, wav: np.ndarray, phn: list, words: list, text: str,
                    fmt: str, extra: dict) -> dict:
    """One utterance's audio (float at 16 kHz), .phn, .wrd and .txt under ``out/<speaker>/``."""
    n = len(wav)
    d = out / spk.name
    d.mkdir(parents=True, exist_ok=True)
    pcm = np.clip(np.round(wav * 32767), -32768, 32767).astype(np.int16)
    sf.write(d / f"{stem}.{fmt}", pcm, SR, subtype="PCM_16", format=fmt.upper())
    (d / f"{stem}.phn").write_text("".join(f"{s} {e} {p}\n" for s, e, p in phn))
    (d / f"{stem}.wrd").write_text("".join(f"{s} {e} {w}\n" for s, e, w in words))
    (d / f"{stem}.txt").write_text(f"0 {n} {text}\n")
    return {"utt": f"{spk.name}/{stem}", "samples": n, **extra}


# --- espeak-ng ---------------------------------------------------------------------------------
_ESPEAK = None


def espeak_utterance(job: tuple[str, Speaker, str, str, str]) -> dict:
    """Synthesize and write one espeak utterance (one library instance per process: it is global)."""
    global _ESPEAK
    import espeak_synth

    key, spk, text, out, fmt = job
    if _ESPEAK is None:
        _ESPEAK = espeak_synth.Espeak()
    _ESPEAK.set_voice(spk.voice, spk.rate, spk.pitch, spk.pitch_range)
    try:
        spoken = _ESPEAK.say(text)
    except espeak_synth.SkipUtterance as e:
        return {"utt": key.replace("__", "/"), "skipped": str(e), "text": text}
    unmapped: Counter = Counter()
    # espeak's 22050 Hz -> 16 kHz, then the resample factor f as for Festival (16000*f -> 16000,
    # a whole number of Hz: a small resampling kernel): sample x lands at x * 16000 / (22050 f)
    src = int(round(SR * spk.resample))
    label_rate = spoken.rate * src / SR
    phn, words = espeak_synth.to_corpus_phones(
        espeak_synth.Spoken(spoken.wav, label_rate, spoken.phones, spoken.words), SR, unmapped)
    wav = resample(resample(spoken.wav.astype(np.float32) / 32768.0, spoken.rate, SR), src, SR)
    n = len(wav)
    phn[-1][1] = n  # the resampled length may differ from the rescaled end by a sample
    phn = [sg for sg in phn if sg[0] < n]
    phn[-1][1] = n
    words = [(a, min(b, n), w) for a, b, w in words]
    return write_utterance(Path(out), spk, key.split("__")[1], wav, phn, words, text, fmt,
                           {"dropped_segments": spoken.dropped_zero_length, "dropped_words": 0,
                            "unmapped": dict(unmapped)})


def run_espeak(items: list[tuple[str, Speaker, str]], out: Path, fmt: str) -> list[dict]:
    """espeak utterances one after another in this process (espeak is fast: about 80 sentences a
    second on one core, so no worker processes)."""
    if not items:
        return []
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import espeak_synth

    why = espeak_synth.missing()
    if why:
        raise SystemExit(f"espeak voices requested but {why}")
    from vecset.pipelines.console import track

    return [espeak_utterance((k, s, t, str(out), fmt)) for k, s, t in track(items, "synthesizing (espeak-ng)")]


# --- flite ---------------------------------------------------------------------------------------
_FLITE = None


def flite_utterance(key: str, spk: Speaker, text: str, out: Path, fmt: str) -> dict:
    """Synthesize and write one flite utterance (scripts/flite_synth.py; one library instance per
    process). Its segments are Festival's radio phones with end times, labelled as Festival's
    (``radio_labels``); its words, with a split-off possessive joined back (``merge_clitics``), must
    be the sentence's words, else the utterance is skipped (``flite_words_differ``)."""
    global _FLITE
    import flite_synth

    if _FLITE is None:
        _FLITE = flite_synth.Flite()
    _FLITE.set_voice(spk.voice, spk.stretch, spk.f0_mean)
    try:
        spoken = _FLITE.say(text)
    except flite_synth.SkipUtterance as e:
        return {"utt": key.replace("__", "/"), "skipped": str(e), "text": text}
    said = merge_clitics([list(w) for w in spoken.words])
    if words_differ([w for _, _, w in said], text):
        return {"utt": key.replace("__", "/"), "skipped": "flite_words_differ", "text": text,
                "flite_words": " ".join(w for _, _, w in said)}
    # flite's 16 kHz -> 16 kHz read at 16000*f Hz, as Festival's wave
    wav = resample(spoken.wav.astype(np.float32) / 32768.0, spoken.rate, SR)
    if spk.resample != 1.0:
        wav = resample(wav, int(round(SR * spk.resample)), SR)
    phn, words, dropped, dropped_words = radio_labels(spoken.segments, said, text, len(wav), spk.resample)
    return write_utterance(out, spk, key.split("__")[1], wav, phn, words, text, fmt,
                           {"dropped_segments": dropped, "dropped_words": dropped_words})


def run_flite(items: list[tuple[str, Speaker, str]], out: Path, fmt: str) -> list[dict]:
    """flite utterances one after another in this process (flite's voices synthesize about 50
    seconds of speech a second on one core, so no worker processes)."""
    if not items:
        return []
    import flite_synth

    why = flite_synth.missing()
    if why:
        raise SystemExit(f"flite voices requested but {why}")
    from vecset.pipelines.console import track

    return [flite_utterance(k, s, t, out, fmt) for k, s, t in track(items, "synthesizing (flite)")]


def check_flite(install: bool) -> None:
    import flite_synth

    if flite_synth.missing() is not None:
        install_or_exit(flite_synth.PACKAGES, install, "flite voices requested but flite is missing")


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


def espeak_version() -> str:
    res = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True) if shutil.which("espeak-ng") else None
    return res.stdout.strip() if res else "libespeak-ng1"


ESPEAK_PACKAGES = ["espeak-ng", "libespeak-ng1"]


def check_espeak(install: bool) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import espeak_synth

    if espeak_synth.missing() is not None:
        install_or_exit(ESPEAK_PACKAGES, install, "espeak voices requested but espeak-ng is missing")


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
