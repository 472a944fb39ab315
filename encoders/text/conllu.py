"""Reading CoNLL-U files (Universal Dependencies): sentences of words with their tags, every problem named by file and line."""

from __future__ import annotations

import re
from pathlib import Path

import conllu

from vecset.encoders.files import read_utf8_lines

# the 17 universal part-of-speech tags (UD v2)
UPOS = ["ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
        "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X"]


_ID = re.compile(r"^(\d+|\d+-\d+|\d+\.\d+)$")


COLUMNS = ["ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC"]


class IdOrder:
    """The ID sequence of one sentence, as the format prescribes: words 1, 2, 3, ...; a
    multiword range ``a-b`` (b > a) just before its first word a, not overlapping the one
    before; empty nodes ``i.1``, ``i.2``, ... just after word i (``0.k`` before word 1).
    ``see`` and ``end`` return what is wrong, or None."""

    def __init__(self) -> None:
        self.word, self.empty, self.range_end = 0, 0, 0
        self.range_id, self.range_line = "", 0

    def see(self, id_: str, line: int) -> str | None:
        if "-" in id_:
            a, b = map(int, id_.split("-"))
            if a <= self.range_end:
                return f"range {id_} overlaps the range before it ({self.range_end} is in both)"
            if a != self.word + 1:
                return f"range {id_} must start at the next word, {self.word + 1}"
            if b <= a:
                return f"range {id_} must span two or more words"
            self.range_end, self.range_id, self.range_line = b, id_, line
        elif "." in id_:
            i, k = map(int, id_.split("."))
            if i != self.word:
                return f"empty node {id_} must follow word {i} (the last word is {self.word})"
            if k != self.empty + 1:
                return f"empty node {id_} out of order, expected {self.word}.{self.empty + 1}"
            self.empty = k
        else:
            if int(id_) != self.word + 1:
                return f"word ID {id_} out of order, expected {self.word + 1}"
            self.word, self.empty = self.word + 1, 0
        return None

    def end(self) -> tuple[int, str] | None:
        """(line, problem) of a range reaching past the sentence's last word, or None."""
        if self.range_end > self.word:
            return self.range_line, f"range {self.range_id} ends past the sentence's last word, {self.word}"
        return None


def read_conllu(path: str | Path, tags: list[str] = UPOS) -> tuple[list[dict], dict]:
    """Sentences ``{"forms": [...], "tags": [tag index, ...], "line": first line}`` and
    counts of what was skipped. A malformed line raises ValueError naming file and line."""
    path = Path(path)
    index = {t: i for i, t in enumerate(tags)}
    sentences, skipped = [], {"multiword_tokens": 0, "empty_nodes": 0}
    block: list[str] = []
    start = 1
    order = IdOrder()

    def flush() -> None:
        if not any(not ln.startswith("#") for ln in block):
            return
        if problem := order.end():
            raise ValueError(f"{path}:{problem[0]}: {problem[1]}")
        try:
            tokenlist = conllu.parse("\n".join(block) + "\n\n")[0]
        except Exception as e:  # conllu's ParseException: name the sentence's place
            raise ValueError(f"{path}:{start}: sentence could not be parsed: {e}") from e
        forms, labels = [], []
        for tok in tokenlist:
            if not isinstance(tok["id"], int):
                skipped["multiword_tokens" if isinstance(tok["id"], tuple) and tok["id"][1] == "-" else "empty_nodes"] += 1
                continue
            forms.append(tok["form"])
            labels.append(index[tok["upos"]])
        sentences.append({"forms": forms, "tags": labels, "line": start})

    for n, line in enumerate(read_utf8_lines(path), 1):
        if not line.strip():
            flush()
            block, start, order = [], n + 1, IdOrder()
            continue
        if not line.startswith("#"):
            cols = line.split("\t")
            if len(cols) != 10:
                raise ValueError(f"{path}:{n}: a word line needs 10 tab-separated columns, got {len(cols)}: {line!r}")
            if "" in cols:  # the format writes _ for an unspecified field
                c = cols.index("")
                raise ValueError(f"{path}:{n}: column {c + 1} ({COLUMNS[c]}) is empty; an unspecified field is _")
            if not _ID.match(cols[0]):
                raise ValueError(f"{path}:{n}: ID must be an integer, a range (1-2) or a decimal (1.1), got {cols[0]!r}")
            if problem := order.see(cols[0], n):
                raise ValueError(f"{path}:{n}: {problem}")
            if "-" not in cols[0] and "." not in cols[0] and cols[3] not in index:
                raise ValueError(f"{path}:{n}: UPOS {cols[3]!r} is not one of the {len(tags)} tags {tags}")
        block.append(line)
    flush()
    if not sentences:
        raise ValueError(f"{path}: no sentences")
    return sentences, skipped
