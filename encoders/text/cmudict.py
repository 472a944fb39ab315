"""Reading the CMU Pronouncing Dictionary and word lists."""

from __future__ import annotations

from pathlib import Path

from vecset.encoders.files import read_utf8_lines


def read_dict_file(path: str | Path) -> dict[str, list[list[str]]]:
    """A CMUdict-format file: ``WORD  P1 P2 ...`` per line, ``WORD(2)`` for variants,
    ``;;;`` comments. A line without phones is an error naming the file and line."""
    out: dict[str, list[list[str]]] = {}
    for n, line in enumerate(read_utf8_lines(path), 1):
        line = line.strip()
        if not line or line.startswith(";;;"):
            continue
        parts = line.split()
        if len(parts) < 2:
            raise ValueError(f"{path}:{n}: expected 'WORD PHONE [PHONE ...]', got {line!r}")
        word = parts[0].lower()
        if word.endswith(")") and "(" in word:
            word = word[: word.rindex("(")]
        out.setdefault(word, []).append(parts[1:])
    return out


def strip_stress(phones: list[str]) -> list[str]:
    return [p.rstrip("012") for p in phones]


def read_word_file(path: str | Path) -> list[str]:
    """One word per line; an empty line is an error (file and line number)."""
    words = []
    for n, line in enumerate(read_utf8_lines(path), 1):
        w = line.strip()
        if not w:
            raise ValueError(f"{path}:{n}: empty word (one word per line expected)")
        words.append(w)
    if not words:
        raise ValueError(f"{path}: no words")
    return words
