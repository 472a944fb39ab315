"""Token labeling from CoNLL-U files (Universal Dependencies): each word -> its UPOS tag.

Format: https://universaldependencies.org/format.html (10 tab-separated columns per word
line, ``#`` comments, a blank line after each sentence). Parsing: the ``conllu`` package;
each line is first checked here so that a malformed one is reported with its file and line
number. Multiword-token lines (``1-2``) and empty nodes (``1.1``) carry no UPOS tag of
their own: they are skipped and counted.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import conllu
import torch
from torch.utils.data import DataLoader

from vecset.pipelines.data.base import VecsetDataModule

log = logging.getLogger("vecset")

# the 17 universal part-of-speech tags (UD v2)
UPOS = ["ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
        "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X"]
_ID = re.compile(r"^(\d+|\d+-\d+|\d+\.\d+)$")


def read_conllu(path: str | Path, tags: list[str] = UPOS) -> tuple[list[dict], dict]:
    """Sentences ``{"forms": [...], "tags": [tag index, ...], "line": first line}`` and
    counts of what was skipped. A malformed line raises ValueError naming file and line."""
    path = Path(path)
    index = {t: i for i, t in enumerate(tags)}
    sentences, skipped = [], {"multiword_tokens": 0, "empty_nodes": 0}
    block: list[str] = []
    start = 1

    def flush() -> None:
        if not any(not ln.startswith("#") for ln in block):
            return
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

    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip():
                flush()
                block, start = [], n + 1
                continue
            if not line.startswith("#"):
                cols = line.split("\t")
                if len(cols) != 10:
                    raise ValueError(f"{path}:{n}: a word line needs 10 tab-separated columns, got {len(cols)}: {line!r}")
                if not _ID.match(cols[0]):
                    raise ValueError(f"{path}:{n}: ID must be an integer, a range (1-2) or a decimal (1.1), got {cols[0]!r}")
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

    def setup(self, stage: str | None = None) -> None:
        for split, path in self.files.items():
            if split in self.splits:
                continue
            sents, skipped = read_conllu(path)
            for i, s in enumerate(sents):
                s["id"] = i
            self.splits[split] = sents
            if any(skipped.values()):
                log.info("%s: %d sentences; skipped (no UPOS of their own): %s", path, len(sents), skipped)

    def train_texts(self, field: str) -> list:
        self.setup("fit")
        return [s["forms"] for s in self.splits["train"]]

    def _loader(self, split: str, shuffle: bool = False) -> DataLoader:
        return DataLoader(self.splits[split], batch_size=self.batch_size, shuffle=shuffle, collate_fn=collate_tokens)

    def predict_split(self) -> str:
        return "predict"

    def describe(self, sample_id: int) -> str:
        s = self.splits["predict"][sample_id]
        return f"{self.files['predict']}:{s['line']} " + " ".join(s["forms"])
