"""Featurize a large unlabelled SMILES corpus into the feature cache, chunk by chunk, for
streamed pretraining (``MoleculeStreamDataModule``, ``pipelines/molecules/pretrain_stream.py``).

    python scripts/featurize_corpus.py --csv moses.csv --cache_dir CACHE --chunk_size 10000 \
        --jobs 2 --log featurize.jsonl

``--jobs N`` featurizes N chunks at a time, a process each (N cores: about N times the
molecules per second). Stopped and started again, it goes on with the chunks whose cache file is
missing (finished chunks are neither read nor featurized again). The featurizer's settings must be the pretraining
data module's (``max_atoms``, ``max_dist``, ``lap_pe_k``; descriptors on), else its keys differ.
Each featurized chunk appends a JSON line (chunk, molecules, CPU and wall seconds) to ``--log``.
"""

from __future__ import annotations

import argparse
import json
import logging

from vecset.encoders.graph import FeatureCache, MoleculeFeaturizer
from vecset.pipelines.molecules.pretrain_chunks import chunk_corpus, featurize_chunks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--smiles_column", default="smiles")
    ap.add_argument("--cache_dir", required=True)
    ap.add_argument("--chunk_size", type=int, default=10_000)
    ap.add_argument("--max_chunks", type=int, default=None, help="stop after featurizing this many")
    ap.add_argument("--max_atoms", type=int, default=100)
    ap.add_argument("--max_dist", type=int, default=8)
    ap.add_argument("--lap_pe_k", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="processes featurizing chunks side by side (one core each)")
    ap.add_argument("--log", default=None, help="append one JSON line per featurized chunk")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    featurizer = MoleculeFeaturizer(args.max_atoms, args.max_dist, args.lap_pe_k, descriptors=True)
    cache = FeatureCache(args.cache_dir)
    corpus = chunk_corpus(args.csv, featurizer, args.smiles_column, args.chunk_size, cache)
    print(f"{corpus.path}: {corpus.rows} rows in {len(corpus.chunks)} chunks, {len(corpus.missing())} to featurize",
          flush=True)
    paths = {c.index: c.path for c in corpus.chunks}
    for row in featurize_chunks(corpus, featurizer, cache, max_chunks=args.max_chunks, jobs=args.jobs):
        print(json.dumps(row), flush=True)  # each chunk as it finishes
        if args.log:
            with open(args.log, "a") as f:
                f.write(json.dumps(row) + "\n")
        if not paths[row["chunk"]].exists():  # the cache could not be written (logged): stop
            raise SystemExit(f"error: {paths[row['chunk']]}: the chunk's cache file was not written")


if __name__ == "__main__":
    main()
