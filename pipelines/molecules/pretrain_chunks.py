"""A large unlabelled corpus featurized in chunks that are never all in memory.

``read_in_chunks`` (``pretrain.py``) featurizes a CSV ``chunk_size`` rows at a time into the feature
cache, but keeps every molecule: about 55 KB each, 300 k molecules on 23 GB. Here each chunk is
featurized (or found in the cache: a file per chunk, keyed by its SMILES and the featurizer's
settings, ``encoders/graph/cache.py``) and let go; ``ChunkedCorpus`` names the chunks' cache files
so that a dataset can read them back one at a time (``pretrain_stream.py``). Chunk ``k`` is the
rows ``[k * chunk_size, (k + 1) * chunk_size)`` of the file, as in ``read_in_chunks``: both share
the same cache files.
"""

from __future__ import annotations

import logging
import multiprocessing
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from vecset.encoders.files import read_csv_rows
from vecset.encoders.graph import FeatureCache, MoleculeFeaturizer, featurize_smiles

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Chunk:
    """One chunk of a corpus: its rows ``[start, stop)`` of the file, their SMILES (stripped, in
    file order), their file lines, and the cache key and file that hold them featurized."""

    index: int
    start: int
    smiles: tuple[str, ...]
    lines: tuple[int, ...]
    key: str
    path: Path

    @property
    def stop(self) -> int:
        return self.start + len(self.smiles)


@dataclass(frozen=True)
class ChunkedCorpus:
    """A CSV of SMILES cut into chunks of ``chunk_size`` rows (the last may be shorter)."""

    path: Path
    chunks: tuple[Chunk, ...]

    @property
    def rows(self) -> int:
        return sum(len(c.smiles) for c in self.chunks)

    def missing(self) -> list[Chunk]:
        """The chunks whose cache file is not there (not featurized yet)."""
        return [c for c in self.chunks if not c.path.exists()]


def chunk_corpus(path: str | Path, featurizer: MoleculeFeaturizer, smiles_column: str, chunk_size: int,
                 cache: FeatureCache) -> ChunkedCorpus:
    """The file's chunks and the cache file of each (nothing is featurized or read from the cache)."""
    if isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a whole number of rows >= 1, got {chunk_size!r}")
    df, lines = read_csv_rows(path)
    if smiles_column not in df.columns:
        raise ValueError(f"{path}: column(s) {[smiles_column]} not in the file; its columns are {list(df.columns)}")
    smiles = [str(s).strip() for s in df[smiles_column]]
    settings = featurizer.settings()
    chunks = []
    for k, start in enumerate(range(0, len(smiles), chunk_size)):
        part = smiles[start : start + chunk_size]
        # featurize_smiles keys a file by the chunk's distinct SMILES, in order
        key = cache.key(list(dict.fromkeys(part)), settings)
        chunks.append(Chunk(k, start, tuple(part), tuple(lines[start : start + len(part)]), key, cache.path(key)))
    return ChunkedCorpus(Path(path), tuple(chunks))


def _featurize_one(chunk: Chunk, corpus_name: str, n_chunks: int, featurizer: MoleculeFeaturizer,
                   cache: FeatureCache, progress=None) -> dict:
    """Featurize ``chunk`` into its cache file; its index, molecule count, CPU and wall seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    featurize_smiles(list(chunk.smiles), featurizer, cache, progress,
                     source=f"{corpus_name} chunk {chunk.index + 1}/{n_chunks}")
    return {"chunk": chunk.index, "molecules": len(chunk.smiles), "cpu_s": round(time.process_time() - cpu, 2),
            "wall_s": round(time.perf_counter() - wall, 2)}


def _worker_init() -> None:
    """A featurizing process: one thread (the workers are the parallelism)."""
    import torch

    torch.set_num_threads(1)


def featurize_chunks(corpus: ChunkedCorpus, featurizer: MoleculeFeaturizer, cache: FeatureCache,
                     progress=None, max_chunks: int | None = None, jobs: int = 1) -> Iterator[dict]:
    """Featurize every chunk whose cache file is missing and write it; a chunk already in the
    cache is not read nor featurized again (so a stopped run goes on where it stopped).
    ``max_chunks``: stop after featurizing that many. ``jobs``: processes featurizing chunks side
    by side (each writes its own chunks' files; a chunk's file appears whole or not at all,
    ``FeatureCache.save``). Yields, per chunk as it finishes, its index, molecule count and CPU /
    wall seconds of the process that featurized it (the throughput of this machine)."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a whole number of processes >= 1, got {jobs!r}")
    todo = corpus.missing()[:max_chunks]
    name, n = corpus.path.name, len(corpus.chunks)

    def logged(row: dict) -> dict:
        log.info("chunk %d: %d molecules, %.1f molecules per CPU second, %.1f per wall second", row["chunk"],
                 row["molecules"], row["molecules"] / max(row["cpu_s"], 1e-9),
                 row["molecules"] / max(row["wall_s"], 1e-9))
        return row

    if jobs == 1 or len(todo) <= 1:
        for chunk in todo:
            yield logged(_featurize_one(chunk, name, n, featurizer, cache, progress))
        return
    # spawned, not forked: a forked child of a process that ran torch's thread pool can hang
    with ProcessPoolExecutor(min(jobs, len(todo)), mp_context=multiprocessing.get_context("spawn"),
                             initializer=_worker_init) as pool:
        futures = [pool.submit(_featurize_one, chunk, name, n, featurizer, cache) for chunk in todo]
        for future in as_completed(futures):
            yield logged(future.result())


__all__ = ["Chunk", "ChunkedCorpus", "chunk_corpus", "featurize_chunks"]
