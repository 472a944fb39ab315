"""Token labeling from CoNLL-U files (Universal Dependencies): each word -> its UPOS tag.

Format: https://universaldependencies.org/format.html (10 tab-separated columns per word
line, ``#`` comments, a blank line after each sentence). Parsing: the ``conllu`` package;
each line is first checked here so that a malformed one is reported with its file and line
number (``conllu`` checks neither the order of IDs nor empty fields, and its errors name
no line). Multiword-token lines (``1-2``) and empty nodes (``1.1``) carry no UPOS tag of
their own: they are skipped and counted.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from pathlib import Path

import conllu
import torch
from torch.utils.data import DataLoader

from vecset.backbone.data_spec import DataSpec
from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.data.text_files import read_utf8_lines

log = logging.getLogger("vecset")

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


def collate_tokens(items: list[dict], pad_label: int = -100) -> dict:
    """``{"text": [B token lists], "y": (B, N) long padded with pad_label, "mask", "ids"}``."""
    B, N = len(items), max(len(it["forms"]) for it in items)
    y = torch.full((B, N), pad_label, dtype=torch.long)
    mask = torch.zeros(B, N, dtype=torch.bool)
    for i, it in enumerate(items):
        n = len(it["forms"])
        mask[i, :n] = True
        if "tags" in it:
            y[i, :n] = torch.tensor(it["tags"])
    return {"text": [it["forms"] for it in items], "y": y, "mask": mask,
            "ids": torch.tensor([it["id"] for it in items])}


class CoNLLUDataModule(VecsetDataModule):
    """UPOS tagging from CoNLL-U train/dev/test files (N -> N, ``LabelingHead`` with 17 classes).

    Args:
        train_file, val_file, test_file: CoNLL-U files (e.g. a UD treebank's splits).
        predict_file: CoNLL-U file to tag with ``vecset predict`` (default: test_file).
        batch_size: sentences per batch.

    Batch: ``text`` (B lists of word forms; use ``TextEncoder(level="word")``), ``y``
    (B, N) UPOS indices, ``mask`` (B, N), ``ids`` (B,).
    """

    class_names = UPOS

    def __init__(self, train_file: str, val_file: str, test_file: str, predict_file: str | None = None,
                 batch_size: int = 32) -> None:
        super().__init__()
        self.files = {"train": train_file, "val": val_file, "test": test_file,
                      "predict": predict_file or test_file}
        self.batch_size = batch_size
        self.splits: dict[str, list[dict]] = {}
        self.sources: dict[int, tuple[str, dict]] = {}  # sample id -> (file, sentence)

    def setup(self, stage: str | None = None) -> None:
        for split, path in self.files.items():
            if split in self.splits:
                continue
            sents, skipped = read_conllu(path)
            for s in sents:  # ids unique over all splits, so that an id alone names its sentence
                s["id"] = len(self.sources)
                self.sources[s["id"]] = (path, s)
            self.splits[split] = sents
            if any(skipped.values()):
                log.info("%s: %d sentences; skipped (no UPOS of their own): %s", path, len(sents), skipped)

    def data_spec(self, stage: str) -> DataSpec:
        """At fit, the training sentences' word forms (batch field ``text``), for the vocabulary."""
        spec = super().data_spec(stage)
        if spec.fit:
            spec = replace(spec, train_texts={"text": [s["forms"] for s in self.splits["train"]]})
        return spec

    def _loader(self, split: str, shuffle: bool = False) -> DataLoader:
        return DataLoader(self.splits[split], batch_size=self.batch_size, shuffle=shuffle, collate_fn=collate_tokens)

    def predict_split(self) -> str:
        return "predict"

    def describe(self, sample_id: int) -> str:
        """``file:line`` of the sentence's first line, then its words."""
        path, s = self.sources[sample_id]
        return f"{path}:{s['line']} " + " ".join(s["forms"])
