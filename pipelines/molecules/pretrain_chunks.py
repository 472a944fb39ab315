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
import time
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


def featurize_chunks(corpus: ChunkedCorpus, featurizer: MoleculeFeaturizer, cache: FeatureCache,
                     progress=None, max_chunks: int | None = None) -> list[dict]:
    """Featurize every chunk whose cache file is missing, in order, and write it; a chunk already
    in the cache is not read nor featurized again (so a stopped run goes on where it stopped).
    ``max_chunks``: stop after featurizing that many. Returns, per chunk featurized, its index,
    molecule count and CPU / wall seconds (the throughput of this machine)."""
    done = []
    for chunk in corpus.missing():
        if max_chunks is not None and len(done) >= max_chunks:
            break
        wall, cpu = time.perf_counter(), time.process_time()
        featurize_smiles(list(chunk.smiles), featurizer, cache, progress,
                         source=f"{corpus.path.name} chunk {chunk.index + 1}/{len(corpus.chunks)}")
        row = {"chunk": chunk.index, "molecules": len(chunk.smiles), "cpu_s": round(time.process_time() - cpu, 2),
               "wall_s": round(time.perf_counter() - wall, 2)}
        log.info("chunk %d: %d molecules, %.1f molecules per CPU second, %.1f per wall second", chunk.index,
                 row["molecules"], row["molecules"] / max(row["cpu_s"], 1e-9),
                 row["molecules"] / max(row["wall_s"], 1e-9))
        done.append(row)
    return done


__all__ = ["Chunk", "ChunkedCorpus", "chunk_corpus", "featurize_chunks"]
