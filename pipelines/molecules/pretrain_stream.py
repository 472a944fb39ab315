"""MoleculeStreamDataModule: pretraining on a corpus larger than memory, read back from the
feature cache one chunk at a time.

``MoleculePretrainDataModule`` keeps every featurized molecule (about 55 KB each: 300 k on
23 GB). Here the corpus is featurized in chunks of ``chunk_size`` rows (``pretrain_chunks.py``;
``scripts/featurize_corpus.py`` does it ahead of the run, resumably) and training holds one
chunk's molecules at a time:

- ``ChunkedMolecules``: a map-style dataset of the training molecules, ordered by chunk; an
  index in another chunk than the one held loads that chunk from its cache file (and drops the
  one held).
- ``ChunkSampler``: the order of an epoch visits the chunks in a shuffled order and each
  chunk's molecules in a shuffled order (``seed + epoch``: the same for a resumed run), so an
  epoch loads each chunk once. It is a ``ResumableSampler``: ``ResumeState`` (a CLI callback)
  starts a resumed run (``--ckpt_path last``) at the batch after the checkpoint's.

At setup one pass over the chunks finds the skipped rows, draws the validation molecules
(``val_fraction`` of the rows, ``split_seed``; kept in memory, they are few) and fits the
descriptor scaler on the training molecules with per-chunk moments (Chan et al.'s pairwise
update), never holding more than one chunk. Batches are ``MoleculePretrainDataModule``'s.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from vecset.contracts.data_spec import DataSpec
from vecset.encoders.graph import DescriptorScaler, FeatureCache, InvalidMolecule
from vecset.pipelines.data.samplers import ResumableSampler
from vecset.pipelines.molecules.pretrain import MaskedCollate, MoleculePretrainDataModule
from vecset.pipelines.molecules.pretrain_chunks import (
    Chunk,
    ChunkedCorpus,
    chunk_corpus,
    featurize_chunks,
)

log = logging.getLogger(__name__)


def load_chunk(chunk: Chunk, cache: FeatureCache) -> dict:
    """The chunk's SMILES -> ``Molecule`` / ``InvalidMolecule``, read from its cache file."""
    molecules = cache.load(chunk.key, list(dict.fromkeys(chunk.smiles)))
    if molecules is None:
        raise ValueError(f"{chunk.path}: the featurized chunk {chunk.index} (rows {chunk.start}-{chunk.stop - 1}) "
                         f"is missing or unreadable; featurize it again (scripts/featurize_corpus.py)")
    return molecules


class Moments:
    """Per-column count, mean and sum of squared deviations of float rows, NaNs left out,
    merged chunk by chunk (Chan, Golub and LeVeque 1979): the whole corpus's mean and std
    without holding its rows."""

    def __init__(self) -> None:
        self.n: np.ndarray | None = None
        self.mean: np.ndarray | None = None
        self.m2: np.ndarray | None = None

    def add(self, rows: np.ndarray) -> None:
        ok = ~np.isnan(rows)
        n_b = ok.sum(0).astype(np.float64)  # (F,)
        x = np.where(ok, rows, 0.0)
        mean_b = np.divide(x.sum(0), n_b, out=np.zeros_like(n_b), where=n_b > 0)
        m2_b = (np.where(ok, rows - mean_b, 0.0) ** 2).sum(0)
        if self.n is None:
            self.n, self.mean, self.m2 = n_b, mean_b, m2_b
            return
        n = self.n + n_b
        delta = mean_b - self.mean
        w = np.divide(n_b, n, out=np.zeros_like(n), where=n > 0)
        self.mean = self.mean + delta * w
        self.m2 = self.m2 + m2_b + delta ** 2 * self.n * w
        self.n = n

    def scaler(self, clip: float = 5.0) -> DescriptorScaler:
        """A ``DescriptorScaler`` with these moments (population std, as ``np.nanstd``): mean 0 for
        a column with no value, std 1 for one that does not vary."""
        if self.n is None:
            raise ValueError("no training molecules to fit the descriptor scaler on")
        s = DescriptorScaler(clip)
        s.mean = np.where(self.n > 0, self.mean, 0.0)
        std = np.sqrt(np.divide(self.m2, self.n, out=np.zeros_like(self.m2), where=self.n > 0))
        s.std = np.where(std > 0, std, 1.0)
        return s


class ChunkedMolecules(Dataset):
    """The training molecules of a chunked corpus, position ``i`` in chunk order; one chunk's
    items in memory at a time.

    Args:
        corpus: the chunks (their cache files must exist).
        cache: the feature cache holding them.
        rows: per chunk, the file rows (data row index) that train, in file order.
        scaler: standardizes each molecule's descriptors into ``desc_target``.
    """

    def __init__(self, corpus: ChunkedCorpus, cache: FeatureCache, rows: list[list[int]],
                 scaler: DescriptorScaler) -> None:
        self.corpus, self.cache, self.rows, self.scaler = corpus, cache, rows, scaler
        self.starts = np.cumsum([0, *(len(r) for r in rows)]).tolist()  # position of each chunk's first
        self._held: tuple[int, list[dict]] | None = None
        self.loads = 0  # chunk files read (an epoch in ChunkSampler's order reads each once)

    def __len__(self) -> int:
        return self.starts[-1]

    def chunk_ranges(self) -> list[range]:
        """Dataset positions of each chunk's molecules."""
        return [range(a, b) for a, b in zip(self.starts[:-1], self.starts[1:], strict=True)]

    def _items(self, k: int) -> list[dict]:
        if self._held is None or self._held[0] != k:
            self._held = None  # let the held chunk go before reading the next
            chunk = self.corpus.chunks[k]
            molecules = load_chunk(chunk, self.cache)
            items = []
            for row in self.rows[k]:
                item = molecules[chunk.smiles[row - chunk.start]].item(id=row, line=chunk.lines[row - chunk.start])
                item["desc_target"] = self.scaler.transform(item.pop("raw_desc"))
                items.append(item)
            self._held = (k, items)
            self.loads += 1
        return self._held[1]

    def __getitem__(self, i: int) -> dict:
        k = bisect.bisect_right(self.starts, i) - 1
        return self._items(k)[i - self.starts[k]]


class ChunkSampler(ResumableSampler):
    """Chunk by chunk: epoch ``e`` visits the chunks in ``randperm(chunks, seed + e)`` order and
    each chunk's positions in the next draws of the same generator; resumable like its parent
    (``resume_at``). With several processes each takes every ``replicas``-th index."""

    def __init__(self, dataset: ChunkedMolecules, seed: int | None = None) -> None:
        super().__init__(dataset, shuffle=True, seed=seed)
        self.ranges = dataset.chunk_ranges()

    def order(self, epoch: int) -> list[int]:
        g = torch.Generator().manual_seed(self.seed + epoch)
        out: list[int] = []
        for k in torch.randperm(len(self.ranges), generator=g).tolist():
            r = self.ranges[k]
            out.extend((torch.randperm(len(r), generator=g) + r.start).tolist())
        return out

    def __iter__(self) -> Iterator[int]:
        indices = self.order(self.epoch)[self.rank :: self.num_replicas]
        if self._resume_epoch is not None and self._resume_epoch == self.epoch:
            indices = indices[self._resume_skip :]
            self._resume_epoch, self._resume_skip = None, 0
        return iter(indices)

    def __len__(self) -> int:
        return len(range(self.rank, len(self.dataset), self.num_replicas))


class EpochMaskedCollate(MaskedCollate):
    """``MaskedCollate`` whose training masks are a function of (``seed``, the sampler's epoch,
    the batch's ids), not of a generator that advances: a run resumed in the middle of an epoch
    draws the same masks as one never stopped (a generator's state is not in the checkpoint)."""

    def __init__(self, featurizer, rate: float, hide_bonds: bool, seed: int, sampler: ChunkSampler) -> None:
        super().__init__(featurizer, rate, hide_bonds, seed, fixed=False)
        self.seed, self.sampler = seed, sampler

    def __call__(self, items: list[dict]) -> dict:
        ids = np.array([it["id"] for it in items], dtype=np.int64)
        digest = hashlib.sha256(ids.tobytes() + f"{self.seed},{self.sampler.epoch}".encode()).digest()
        self.generator = torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") >> 1)
        return super().__call__(items)


class MoleculeStreamDataModule(MoleculePretrainDataModule):
    """Unlabelled molecules for pretraining, streamed from featurized chunks (module docstring).

    Args:
        csv_path, smiles_column, val_fraction, split_seed, mask_rate, hide_bonds, max_atoms,
            max_dist, lap_pe_k, batch_size, cache_dir: ``MoleculePretrainDataModule``'s.
        chunk_size: rows per chunk (the featurization's: ``scripts/featurize_corpus.py --chunk_size``).
        featurize_missing: featurize, at setup, the chunks not in the cache yet (else a missing
            chunk is an error naming the featurization command).

    The validation molecules are the first ``round(val_fraction * rows)`` rows of
    ``default_rng(split_seed).permutation(rows)`` that are valid molecules; test is validation.
    """

    def __init__(self, csv_path: str, smiles_column: str = "smiles", val_fraction: float = 0.02,
                 split_seed: int = 0, mask_rate: float = 0.15, hide_bonds: bool = True, max_atoms: int = 100,
                 max_dist: int = 8, lap_pe_k: int = 0, batch_size: int = 64, cache_dir: str | None = None,
                 chunk_size: int = 10_000, featurize_missing: bool = False) -> None:
        super().__init__(csv_path, smiles_column, val_fraction, split_seed, mask_rate, hide_bonds, max_atoms,
                         max_dist, lap_pe_k, batch_size, num_workers=0, cache=True, cache_dir=cache_dir,
                         chunk_size=chunk_size)
        self.featurize_missing = featurize_missing
        self.train_set: ChunkedMolecules | None = None

    def setup(self, stage: str | None = None) -> None:
        if self.train_set is not None:
            return
        assert self.cache is not None and self.chunk_size is not None
        corpus = chunk_corpus(self.csv_path, self.featurizer, self.smiles_column, self.chunk_size, self.cache)
        missing = corpus.missing()
        if missing and self.featurize_missing:
            list(featurize_chunks(corpus, self.featurizer, self.cache, self._progress()))
        elif missing:
            raise ValueError(f"{self.csv_path}: {len(missing)} of {len(corpus.chunks)} chunks are not featurized "
                             f"(first: chunk {missing[0].index}, rows {missing[0].start}-{missing[0].stop - 1}); run "
                             f"scripts/featurize_corpus.py --csv {self.csv_path} --chunk_size {self.chunk_size} "
                             f"--cache_dir {self.cache.directory}, or set featurize_missing: true")
        n_val = max(1, int(round(self.val_fraction * corpus.rows)))
        val_rows = set(np.random.default_rng(self.split_seed).permutation(corpus.rows)[:n_val].tolist())
        moments, train_rows, val_items, self.skipped = Moments(), [], [], []
        for chunk in corpus.chunks:
            molecules = load_chunk(chunk, self.cache)
            rows, desc = [], []
            for j, s in enumerate(chunk.smiles):
                row, m = chunk.start + j, molecules[s]
                if isinstance(m, InvalidMolecule):
                    self.skipped.append({"line": chunk.lines[j], "smiles": s, "reason": m.reason})
                elif row in val_rows:
                    val_items.append(m.item(id=row, line=chunk.lines[j]))
                else:
                    rows.append(row)
                    desc.append(m.descriptors)
            if desc:
                moments.add(np.stack(desc))
            train_rows.append(rows)
        if self.skipped:
            log.warning("%s: skipped %d of %d molecules (first: line %s, %s)", self.csv_path, len(self.skipped),
                        corpus.rows, self.skipped[0]["line"], self.skipped[0]["reason"])
        n_train = sum(len(r) for r in train_rows)
        if n_train < 1 or not val_items:
            raise ValueError(f"{self.csv_path}: {n_train} training and {len(val_items)} validation molecules, "
                             f"too few to pretrain on")
        self.scaler = moments.scaler()
        for it in val_items:
            it["desc_target"] = self.scaler.transform(it.pop("raw_desc"))
        self.train_set = ChunkedMolecules(corpus, self.cache, train_rows, self.scaler)
        self.splits = {"val": val_items, "test": val_items}
        log.info("%s: pretraining on %d molecules in %d chunks, validating on %d", self.csv_path, n_train,
                 len(corpus.chunks), len(val_items))

    def _loader(self, split: str, shuffle: bool = False) -> DataLoader:
        if split == "train":
            assert self.train_set is not None
            sampler = ChunkSampler(self.train_set)
            collate = EpochMaskedCollate(self.featurizer, self.mask_rate, self.hide_bonds, self.split_seed, sampler)
            return DataLoader(self.train_set, batch_size=self.batch_size, sampler=sampler, collate_fn=collate)
        collate = MaskedCollate(self.featurizer, self.mask_rate, self.hide_bonds, self.split_seed, fixed=True)
        return DataLoader(self.splits[split], batch_size=self.batch_size, collate_fn=collate)

    def data_spec(self, stage: str) -> DataSpec:
        """As ``MoleculePretrainDataModule``'s, without ``train_targets`` (they are never all in memory)."""
        return replace(super(MoleculePretrainDataModule, self).data_spec(stage), class_names=self.atom_classes,
                       origin=str(self.csv_path), structure=self.featurizer.structure)


__all__ = ["ChunkSampler", "ChunkedMolecules", "EpochMaskedCollate", "Moments", "MoleculeStreamDataModule", "load_chunk"]

