"""UCI Japanese Vowels converted to the time-series folder layout of data/japanese_vowels/.

Source: the PyPI wheel ``sktime`` 1.2.0, members ``sktime/datasets/data/JapaneseVowels/
JapaneseVowels_{TRAIN,TEST}.ts`` (the UCI data set, CC BY 4.0: M. Kudo, J. Toyama and
M. Shimbo, "Multidimensional Curve Classification Using Passing-Through Regions", Pattern
Recognition Letters 20(11-13), 1103-1111, 1999; https://doi.org/10.24432/C5NS47). The wheel
is needed only to run this script, never at training time:

    pip download sktime==1.2.0 --no-deps -d /tmp/tsw
    python scripts/make_japanese_vowels_csv.py --wheel /tmp/tsw/sktime-1.2.0-py3-none-any.whl

Each .ts line is one utterance: 12 channels (LPC cepstrum coefficients) separated by ``:``,
each a comma-separated series of 7-29 frames, then ``:`` and the speaker (1-9). Each becomes
``<split>_<nnn>.csv`` (header ``c01..c12``, one row per frame, the values' text unchanged) and a
row ``file,label,split`` of ``labels.csv``; the published 270 train / 370 test division is kept,
in the files' order.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import zipfile
from pathlib import Path

MEMBER = "sktime/datasets/data/JapaneseVowels/JapaneseVowels_{}.ts"
CHANNELS = [f"c{i:02d}" for i in range(1, 13)]


def parse_ts(text: str, where: str) -> list[tuple[list[list[str]], str]]:
    """The (channels x frames values as text, label) of every case of a .ts file."""
    cases, data = [], False
    for line_no, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not data:
            data = line.lower() == "@data"
            continue
        *channels, label = line.split(":")
        series = [c.split(",") for c in channels]
        if len(series) != len(CHANNELS) or len({len(s) for s in series}) != 1:
            raise SystemExit(f"{where} line {line_no}: expected {len(CHANNELS)} channels of one length, got "
                             f"{[len(s) for s in series]}")
        cases.append((series, label.strip()))
    return cases


def write(out: Path, wheel: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    labels = []
    with zipfile.ZipFile(wheel) as z:
        for split, name in (("train", "TRAIN"), ("test", "TEST")):
            member = MEMBER.format(name)
            text = z.read(member).decode()
            print(f"{member} sha256 {hashlib.sha256(text.encode()).hexdigest()}")
            for i, (series, label) in enumerate(parse_ts(text, member), start=1):
                file = f"{split}_{i:03d}.csv"
                with open(out / file, "w", newline="") as f:
                    w = csv.writer(f, lineterminator="\n")
                    w.writerow(CHANNELS)
                    w.writerows(zip(*series, strict=True))  # one row per frame
                labels.append((file, label, split))
    with open(out / "labels.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["file", "label", "split"])
        w.writerows(labels)
    counts = {s: sum(r[2] == s for r in labels) for s in ("train", "test")}
    print(f"{out}: {len(labels)} series {counts}, labels.csv sha256 "
          f"{hashlib.sha256((out / 'labels.csv').read_bytes()).hexdigest()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, required=True, help="sktime-1.2.0-py3-none-any.whl")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "data" / "japanese_vowels")
    args = parser.parse_args()
    write(args.out, args.wheel)


if __name__ == "__main__":
    main()
