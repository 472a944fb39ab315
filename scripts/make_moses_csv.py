"""Unlabelled drug-like molecules for pretraining: data/molecules/moses_10k.csv.

Source: the PyPI wheel ``molsets`` 0.3.1 (MOSES, MIT licence; Polykovskiy et al., "Molecular
Sets (MOSES): A Benchmarking Platform for Molecular Generation Models", Front. Pharmacol. 11,
565644 (2020); https://github.com/molecularsets/moses), member
``moses/dataset/data/train.csv.gz`` (1,584,663 SMILES from ZINC Clean Leads). The wheel (52 MB)
is needed only to run this script, never to train:

    pip download molsets==0.3.1 --no-deps -d /tmp/moses
    python scripts/make_moses_csv.py --wheel /tmp/moses/molsets-0.3.1-py3-none-any.whl

It draws ``numpy.random.default_rng(0).permutation`` of the rows, canonicalizes each SMILES with
RDKit, and keeps the first ``--n`` whose canonical SMILES is in none of the shipped labelled
sets (every row of freesolv.csv, solubility.csv and b3db.csv, not only their test splits), so
the overlap of the pretraining set with any test split is 0 by construction; the drawn molecules
that were dropped for being in a shipped set are counted per set and printed. Output: one column
``smiles`` (RDKit canonical), in draw order; byte-identical for the same wheel and RDKit.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
from pathlib import Path

import numpy as np
from make_b3db_csv import wheel_member  # scripts/ is on sys.path when a script runs

MEMBER = "moses/dataset/data/train.csv.gz"
DATA = Path(__file__).resolve().parents[1] / "data" / "molecules"
SHIPPED = {"freesolv.csv": "smiles", "solubility.csv": "smiles", "b3db.csv": "smiles"}


def canonical(smiles: str) -> str | None:
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles(smiles)
    return None if mol is None else Chem.MolToSmiles(mol)


def shipped_sets(data: Path = DATA) -> dict[str, set[str]]:
    """Canonical SMILES of every row of each shipped labelled set."""
    out = {}
    for name, column in SHIPPED.items():
        with open(data / name, newline="") as f:
            out[name] = {c for row in csv.DictReader(f) if (c := canonical(row[column]))}
    return out


def draw(smiles: list[str], n: int, exclude: dict[str, set[str]], seed: int = 0) -> tuple[list[str], dict]:
    """The first ``n`` distinct canonical SMILES in ``default_rng(seed)`` order that are in no
    ``exclude`` set; and the counts of those dropped (per shipped set, invalid, duplicate)."""
    dropped = {name: 0 for name in exclude} | {"invalid": 0, "duplicate": 0}
    kept: list[str] = []
    seen: set[str] = set()
    for i in np.random.default_rng(seed).permutation(len(smiles)):
        c = canonical(smiles[i])
        if c is None:
            dropped["invalid"] += 1
            continue
        hit = [name for name, s in exclude.items() if c in s]
        for name in hit:
            dropped[name] += 1
        if hit:
            continue
        if c in seen:
            dropped["duplicate"] += 1
            continue
        seen.add(c)
        kept.append(c)
        if len(kept) == n:
            break
    return kept, dropped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel", required=True, help="molsets-0.3.1-py3-none-any.whl (pip download molsets)")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--out", default=str(DATA / "moses_10k.csv"))
    args = ap.parse_args()
    raw = wheel_member(Path(args.wheel), MEMBER)
    rows = list(csv.DictReader(io.StringIO(gzip.decompress(raw).decode())))
    smiles = [r["SMILES"] for r in rows]
    kept, dropped = draw(smiles, args.n, shipped_sets())
    out = Path(args.out)
    with open(out, "w", newline="") as f:
        f.write("smiles\n")
        f.writelines(s + "\n" for s in kept)
    print(f"{len(smiles)} MOSES training SMILES; kept {len(kept)}; dropped while drawing: {dropped}")
    print(f"{out}: {out.stat().st_size} bytes, sha256 {hashlib.sha256(out.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main()
