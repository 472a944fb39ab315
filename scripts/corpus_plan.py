"""What the speech corpus generator (make_speech_corpus.py) draws before any synthesis: each
utterance's sentence (WordNet's examples, each used once), the speakers (a voice family and its
settings each), their splits (speaker-disjoint; voice-disjoint with --train/dev/test-voices), the
leave-one-voice-out rotations, and the checks that no split or rotation is left empty.
"""

from __future__ import annotations

import random
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # corpus_*.py, speech_text.py, flite_synth.py beside this file
from flite_synth import LEAKING as FLITE_LEAKING  # noqa: E402
from flite_synth import VOICES as FLITE_VOICES  # noqa: E402
from speech_text import words_of  # noqa: E402

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
