"""From scratch / the shipped 10 k trunk / a large trunk, at equal fine-tuning (issue #58): the
runs of ``bench/molecule_pretrain.py`` (the same config, seed and split, all 100 epochs, each
checkpoint chosen on validation) merged into one table with paired differences +- s.e. over the
splits; the trunk chosen is the one with the lowest mean validation RMSE. Writes
bench/results/molecule_trunk.json.

    python bench/molecule_pretrain.py --set freesolv --splits 0 1 2 --inits none pretrained --tag trunk10k \
        --extra=--trainer.max_time=00:01:00:00 --out bench/results/molecule_trunk_scratch_10k.json
    python bench/molecule_pretrain.py --set freesolv --splits 0 1 2 --inits pretrained --tag trunk_large \
        --ckpt <large trunk> --extra=--trainer.max_time=00:01:00:00 --out bench/results/molecule_trunk_large.json
    python bench/molecule_trunk.py
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def rows_of(path: Path, renames: dict[str, str]) -> tuple[dict, dict[int, dict]]:
    """The JSON of one ``molecule_pretrain.py`` run and, per split, init (renamed) -> (val, test)."""
    data = json.loads(path.read_text())
    out: dict[int, dict] = {}
    for row in data["splits"]:
        for init, run in row.items():
            if isinstance(run, dict):
                out.setdefault(row["split"], {})[renames.get(init, init)] = {
                    "val": run["best_val"], "test": run["test"]["test_rmse"], "epochs": run["epochs"],
                    "train_seconds": run["train_seconds"]}
    return data, out


def paired(a: list[float], b: list[float]) -> dict:
    """Mean of a - b and its standard error over the splits (sample std / sqrt(n))."""
    d = [x - y for x, y in zip(a, b, strict=True)]
    n = len(d)
    mean = sum(d) / n
    se = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1) / n) if n > 1 else float("nan")
    return {"mean": round(mean, 4), "se": round(se, 4), "n": n}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default=str(RESULTS / "molecule_trunk_scratch_10k.json"))
    ap.add_argument("--large", default=str(RESULTS / "molecule_trunk_large.json"))
    ap.add_argument("--trunk", default="", help="what the large trunk is (corpus, epochs, command), for the JSON")
    ap.add_argument("--out", default=str(RESULTS / "molecule_trunk.json"))
    args = ap.parse_args(argv)
    base, runs = rows_of(Path(args.base), {"none": "scratch", "pretrained": "trunk_10k"})
    inputs = [base]
    if Path(args.large).exists():
        large, more = rows_of(Path(args.large), {"pretrained": "trunk_large"})
        inputs.append(large)
        for split, r in more.items():
            runs.setdefault(split, {}).update(r)
    splits = sorted(s for s, r in runs.items() if {"scratch", "trunk_10k", "trunk_large"} <= set(r)
                    or {"scratch", "trunk_10k"} <= set(r))
    inits = [i for i in ("scratch", "trunk_10k", "trunk_large") if all(i in runs[s] for s in splits)]
    mean = {i: {k: round(sum(runs[s][i][k] for s in splits) / len(splits), 4) for k in ("val", "test")}
            for i in inits}
    pairs = {f"{a} - {b}": {k: paired([runs[s][a][k] for s in splits], [runs[s][b][k] for s in splits])
                            for k in ("val", "test")}
             for a, b in [("trunk_10k", "scratch"), ("trunk_large", "scratch"), ("trunk_large", "trunk_10k")]
             if a in inits and b in inits}
    chosen = min(inits, key=lambda i: mean[i]["val"])
    print(f"FreeSolv RMSE over splits {splits} (seed 0): " + "; ".join(
        f"{i} val {mean[i]['val']:.3f} test {mean[i]['test']:.3f}" for i in inits) + f"; chosen on validation: {chosen}")
    for name, p in pairs.items():
        print(f"  {name}: test {p['test']['mean']:+.3f} +- {p['test']['se']:.3f}, val {p['val']['mean']:+.3f} "
              f"+- {p['val']['se']:.3f}")
    Path(args.out).write_text(json.dumps({
        "command": "python bench/molecule_trunk.py", "inputs": [{"command": d["command"], "checkpoint": d["checkpoint"],
                                                                 "loadavg_at_start": d["loadavg_at_start"]}
                                                                for d in inputs],
        "config": base["config"], "large_trunk": args.trunk, "splits": {str(s): runs[s] for s in splits},
        "mean": mean, "paired": pairs, "chosen_on_validation": chosen}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
