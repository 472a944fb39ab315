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
from dataclasses import replace

from torch.utils.data import DataLoader

from vecset.contracts.data_spec import DataSpec
from vecset.encoders.text.collate import collate_tokens
from vecset.encoders.text.conllu import UPOS, read_conllu
from vecset.pipelines.data.base import ModelLink, VecsetDataModule, fixed
from vecset.shipped import data_file

log = logging.getLogger("vecset")


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
        given = {"train": train_file, "val": val_file, "test": test_file, "predict": predict_file or test_file}
        self.files = {split: str(data_file(path, f"{split}_file" if split != "predict" or predict_file else "test_file"))
                      for split, path in given.items()}
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

    def test_items(self) -> list[dict]:
        """The test sentences: dicts of ``forms``, ``tags``, ``id`` and ``line``."""
        return self.splits["test"]

    def attention_example(self) -> tuple[dict, list[str], str, str]:
        """The first test sentence as a batch, each word's form and tag (for ``VectorAttentionReport``)."""
        s = self.splits["test"][0]
        labels = [f"{f} {self.class_names[t]}" for f, t in zip(s["forms"], s["tags"], strict=True)]
        return collate_tokens([s]), labels, "word", self.describe(s["id"])

    def describe(self, sample_id: int) -> str:
        """``file:line`` of the sentence's first line, then its words."""
        path, s = self.sources[sample_id]
        return f"{path}:{s['line']} " + " ".join(s["forms"])

    @classmethod
    def model_links(cls) -> list[ModelLink]:
        """The 17 UPOS tags are the labeling head's ``num_classes``."""
        return [fixed("class count (the UPOS tags)", "head", "num_classes", len(UPOS), f"{len(UPOS)} UPOS tags")]

    def default_reports(self) -> list:
        """The per-class report, one block's attention between the tokens."""
        from vecset.pipelines.reports.defaults import scored  # matplotlib: when asked
        from vecset.pipelines.reports.vector_attention import VectorAttentionReport

        return [*scored(self), VectorAttentionReport()]
