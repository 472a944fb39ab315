"""Sentences for the speech corpus: WordNet's example sentences, filtered to what Festival says as written.

Source: the example sentences in the glosses of WordNet 3.0 (Princeton University; Debian package
``wordnet-base``, files ``/usr/share/wordnet/data.{adj,adv,noun,verb}``; WordNet 3.0 licence, a
BSD-style licence that permits use, copying and redistribution with its copyright notice). A gloss
is ``... | definition; "example one"; "example two"``: every double-quoted string is one candidate.

Filter (every candidate gets exactly one outcome, counted by reason, so nothing is dropped
silently): a candidate is kept when, after spelling out plain numbers, every token is a word of
letters (inner apostrophes and hyphens allowed), followed at most by one of ``, ; : ! ?`` (a
period only at the end), no token is an all-capital acronym or a Roman numeral (Festival would
spell it out or read it as a number, so its words would not match the text), it has 4 to 16
words (a hyphen splits words, as Festival does), and its words (lower-cased) are not those of a
sentence kept earlier. Numbers: integers (``7``, ``1,200``) are spelled out in words, four-digit
years 1100-1999 as years (``1990`` -> ``nineteen ninety``); other numbers (``3.5``, ``1990s``,
``3rd``) drop the sentence (reason ``number``).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

WORDNET_DIR = Path("/usr/share/wordnet")
WORDNET_FILES = ("data.adj", "data.adv", "data.noun", "data.verb")
MIN_WORDS, MAX_WORDS = 4, 16

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]

WORD = re.compile(r"[A-Za-z]+(?:['-][A-Za-z]+)*'?")  # don't, well-known, dogs'
INTEGER = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")  # 7, 1990, 1,200
ROMAN = re.compile(r"(?=[IVXLCDM]{2,}$)M*(C[MD]|D?C{0,3})(X[CL]|L?X{0,3})(I[XV]|V?I{0,3})")
REASONS = ("kept", "characters", "number", "acronym", "too_short", "too_long", "duplicate")


def number_words(n: int) -> str:
    """A non-negative integer below 10**9 in words: 1205 -> 'one thousand two hundred five'."""
    if n < 0 or n >= 10**9:
        raise ValueError(f"number out of range for spelling: {n}")
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else " " + ONES[n % 10])
    for size, name in ((10**6, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            head, rest = divmod(n, size)
            return f"{number_words(head)} {name}" + ("" if rest == 0 else " " + number_words(rest))
    raise AssertionError(n)


def spell_integer(token: str) -> str:
    """An integer token in words; a four-digit year 1100-1999 is read as a year (two pairs)."""
    n = int(token.replace(",", ""))
    if "," not in token and len(token) == 4 and 1100 <= n <= 1999:
        hi, lo = divmod(n, 100)
        if lo == 0:
            return number_words(hi) + " hundred"
        return number_words(hi) + (" oh " if lo < 10 else " ") + number_words(lo)
    return number_words(n)


def clean_sentence(text: str) -> tuple[str | None, str]:
    """One candidate -> (the sentence as it will be synthesized, "kept") or (None, reason)."""
    if not text.isascii():
        return None, "characters"
    tokens = text.split()
    out: list[str] = []
    for i, tok in enumerate(tokens):
        m = re.fullmatch(r"(.*?)([,;:!?.]?)", tok)
        body, punct = m.group(1), m.group(2)
        if punct == "." and i != len(tokens) - 1:
            return None, "characters"  # an inner period: an abbreviation Festival would expand
        if INTEGER.fullmatch(body):
            body = spell_integer(body)
        elif any(c.isdigit() for c in body):
            return None, "number"
        elif not WORD.fullmatch(body):
            return None, "characters"
        elif (len(body) > 1 and body.isupper()) or ROMAN.fullmatch(body):
            return None, "acronym"
        out.append(body + punct)
    n = len(words_of(" ".join(out)))
    if n < MIN_WORDS:
        return None, "too_short"
    if n > MAX_WORDS:
        return None, "too_long"
    s = " ".join(out)
    s = s[0].upper() + s[1:]
    if s[-1] in ",;:":
        s = s[:-1]
    if s[-1] not in ".!?":
        s += "."
    return s, "kept"


def words_of(sentence: str) -> list[str]:
    """The words Festival makes of a kept sentence, lower-cased: punctuation dropped, hyphens split."""
    return [w for w in re.split(r"[\s-]+", re.sub(r"[,;:!?.]", " ", sentence).lower()) if w]


def wordnet_examples(root: Path = WORDNET_DIR) -> list[str]:
    """Every double-quoted example in the glosses, in file order (data.adj, adv, noun, verb)."""
    missing = [f for f in WORDNET_FILES if not (root / f).exists()]
    if missing:
        raise SystemExit(f"{root}: WordNet data files missing ({', '.join(missing)}); install the Debian "
                         "package wordnet-base (sudo apt-get install wordnet-base)")
    out = []
    for name in WORDNET_FILES:
        for ln, line in enumerate((root / name).read_text(encoding="latin-1").splitlines(), 1):
            if line.startswith("  "):  # the licence header
                continue
            if " | " not in line:
                raise ValueError(f"{root / name}:{ln}: no ' | ' before the gloss")
            out += re.findall(r'"([^"]*)"', line.split(" | ", 1)[1])
    return out


def filter_sentences(candidates: list[str]) -> tuple[list[str], Counter]:
    """Kept sentences (first occurrence of each word sequence, in input order) and the count of
    every outcome by reason (``REASONS``; the counts add up to ``len(candidates)``)."""
    kept, seen, counts = [], set(), Counter({r: 0 for r in REASONS})
    for c in candidates:
        s, reason = clean_sentence(c.strip())
        if s is not None:
            key = tuple(words_of(s))
            if key in seen:
                s, reason = None, "duplicate"
            else:
                seen.add(key)
                kept.append(s)
        counts[reason] += 1
    return kept, counts
