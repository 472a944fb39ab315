"""Collect bench/results/*.json and bench/results/ablations/*.json (``bench/ablations.py``, one
per job) into BENCHMARKS.md: one table per benchmark, with the machine, the torch version, the
command that produced it and its figure where the JSON names one (``figure``).

    python bench/report.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import RESULTS, table  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
SKIP = {"machine", "command", "rows"}
ROW_SKIP = {"command", "run_dir"}  # long per-row fields: in the JSON only


def find_rows(data) -> list[dict]:
    """The benchmark's table: ``rows``, else the first list of dicts it holds."""
    if isinstance(data, list):
        return [r for r in data if isinstance(r, dict)]
    if isinstance(data.get("rows"), list):
        return data["rows"]
    for v in data.values():
        if isinstance(v, list) and v and all(isinstance(r, dict) for r in v):
            return v
    for v in data.values():  # named rows: {"results": {name: {...}, ...}}
        if isinstance(v, dict) and v and all(isinstance(r, dict) for r in v.values()):
            return [{"name": n, **r} for n, r in v.items()]
    return []


def section(name: str, data) -> str:
    rows = find_rows(data)
    data = data if isinstance(data, dict) else {}
    m = data.get("machine", {}) if isinstance(data.get("machine"), dict) else {}
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols and k not in ROW_SKIP and not isinstance(r[k], (dict, list))]
    params = ", ".join(f"{k}={v}" for k, v in data.items() if k not in SKIP and not isinstance(v, (dict, list)))
    return "\n".join([
        f"## {name}",
        "",
        f"Command: `{data['command']}`  " if data.get("command") else "Command: see the README section of its job  ",
        (f"Machine: {m.get('cores')} cores ({m.get('cpu')}), {m.get('threads')} torch threads, "
         f"torch {m.get('torch')}, Python {m.get('python')}, GPU: {m.get('cuda') or 'none'}  ")
        if m else "Machine: not recorded in this JSON (see the README section of its job)  ",
        f"Parameters: {params}" if params else "",
        "",
        table(rows, cols) if rows else "(no rows)",
        "",
        *([f"![{name}]({data['figure']})", ""] if data.get("figure") else []),
    ])


def main() -> None:
    files = sorted(RESULTS.glob("*.json")) + sorted((RESULTS / "ablations").glob("*.json"))
    parts = ["# Benchmarks", "",
             "Written by `make bench` (`python bench/report.py` collects `bench/results/*.json`). "
             "Times are medians of repeated runs with their spread; compare the ratios measured "
             "in the same run, since machines are shared and noisy.", ""]
    parts += [section(str(f.relative_to(RESULTS).with_suffix("")), json.loads(f.read_text())) for f in files]
    OUT.write_text("\n".join(parts))
    print(f"wrote {OUT} ({len(files)} benchmarks)")


if __name__ == "__main__":
    main()
