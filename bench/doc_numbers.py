"""List the numbers in a guide that no JSON under bench/results holds.

Every measured number a guide (docs/*.md, README.md) shows should be one a benchmark wrote.
This reads every JSON under bench/results (numbers, and numbers inside strings such as notes)
and prints each decimal number of the given Markdown files that none of them rounds to, with
its line, for a person to check (counts, settings and dates are not flagged: only numbers with
a decimal point). Percentages are also compared as fractions (6.78% -> 0.0678).

    python bench/doc_numbers.py docs/speech.md README.md
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*\.\d+%?")


def json_values(results: Path) -> list[float]:
    values: list[float] = []

    def walk(node: object) -> None:
        if isinstance(node, bool):
            return
        if isinstance(node, (int, float)):
            values.append(float(node))
        elif isinstance(node, str):
            values.extend(float(m.replace(",", "")) for m in re.findall(r"-?\d[\d,]*\.?\d*", node)
                          if any(c.isdigit() for c in m))
        elif isinstance(node, dict):
            for k, v in node.items():
                walk(k)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for path in sorted(results.rglob("*.json")):
        try:
            walk(json.loads(path.read_text()))
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
    return values


def unmatched(text: str, values: list[float]) -> list[tuple[int, str]]:
    found = set()
    for v in values:
        for digits in range(0, 5):
            found.add(round(v, digits))
            found.add(round(abs(v), digits))
            found.add(round(v * 100, digits))
            found.add(round(v / 60, digits))  # seconds shown as minutes
    missing = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in NUMBER.finditer(line):
            token = m.group(0)
            digits = len(token.rstrip("%").split(".")[1])
            value = round(abs(float(token.rstrip("%").replace(",", ""))), digits)
            if value not in found:
                missing.append((lineno, token))
    return missing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    values = json_values(args.results)
    for path in args.files:
        missing = unmatched(path.read_text(), values)
        print(f"{path}: {len(missing)} number(s) in no JSON")
        for lineno, token in missing:
            print(f"  line {lineno}: {token}")


if __name__ == "__main__":
    main()
