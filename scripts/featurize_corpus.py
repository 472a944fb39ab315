"""Featurize a large unlabelled SMILES corpus into the feature cache, chunk by chunk, for
streamed pretraining (``MoleculeStreamDataModule``, ``pipelines/molecules/pretrain_stream.py``).

    python scripts/featurize_corpus.py --csv /work/pretrain-run/moses_400k.csv \
        --cache_dir /work/pretrain-run/cache --chunk_size 10000 --log /work/pretrain-run/featurize.jsonl

Stopped and started again, it goes on at the first chunk whose cache file is missing (finished
chunks are neither read nor featurized again). The featurizer's settings must be the pretraining
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
    ap.add_argument("--log", default=None, help="append one JSON line per featurized chunk")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    featurizer = MoleculeFeaturizer(args.max_atoms, args.max_dist, args.lap_pe_k, descriptors=True)
    cache = FeatureCache(args.cache_dir)
    corpus = chunk_corpus(args.csv, featurizer, args.smiles_column, args.chunk_size, cache)
    print(f"{corpus.path}: {corpus.rows} rows in {len(corpus.chunks)} chunks, {len(corpus.missing())} to featurize",
          flush=True)
    # one chunk at a time, so that each finished chunk is logged as it ends
    while corpus.missing() and (args.max_chunks is None or args.max_chunks > 0):
        first = corpus.missing()[0]
        for row in featurize_chunks(corpus, featurizer, cache, max_chunks=1):
            print(json.dumps(row), flush=True)
            if args.log:
                with open(args.log, "a") as f:
                    f.write(json.dumps(row) + "\n")
        if not first.path.exists():  # the cache could not be written (logged): stop rather than loop
            raise SystemExit(f"error: {first.path}: the chunk's cache file was not written")
        if args.max_chunks is not None:
            args.max_chunks -= 1


if __name__ == "__main__":
    main()
