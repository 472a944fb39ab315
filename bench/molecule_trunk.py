"""From scratch / the shipped 10 k trunk / a large trunk, at equal fine-tuning (issue #58): the
runs of ``bench/molecule_pretrain.py`` (the same config, seed and split, all 100 epochs, each
checkpoint chosen on validation) merged into one table with paired differences +- s.e. over the
splits; the trunk chosen is the one with the lowest mean validation RMSE. Writes
bench/results/molecule_trunk.json.

    python bench/molecule_pretrain.py --set freesolv --splits 0 1 2 --inits none pretrained --tag trunk10k \
        --extra=--trainer.max_time=00:01:00:00 --out bench/results/molecule_trunk_scratch_10k.json
    python bench/molecule_pretrain.py --set freesolv --splits 0 --inits pretrained --tag trunk20k \
        --ckpt <large trunk> --extra=--trainer.max_time=00:01:00:00 --out bench/results/molecule_trunk_20k_s0.json
    python bench/molecule_trunk.py --large bench/results/molecule_trunk_20k_s0.json ...

(the commands as run: bench/logs/2026-12-06-molecule-pretraining.md). Splits without a scratch run
take it from molecule_designs.json's rows of the shipped config's design (seed 0).

With ``--arm NAME=GLOB`` (repeated) the arms are the given runs (each JSON's ``seed``: several
seeds per split), compared on the (split, seed) pairs every arm has, for any set's metric (B3DB:
ROC-AUC on test, validation accuracy choosing, higher better):

    python bench/molecule_trunk.py --arm scratch='runs/ft/freesolv_none_*.json' \
        --arm trunk_500k='runs/ft/freesolv_500k_*.json' --out bench/results/molecule_trunk_seeds.json
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


def designs_scratch(path: Path, design: str, seed: int = 0) -> dict[int, dict]:
    """The shipped config's design trained from scratch in ``molecule_designs.json`` (seed 0): per
    split, val and test RMSE (the same config, seed and split as the scratch runs here)."""
    rows = json.loads(path.read_text())["rows"]
    return {r["split"]: {"val": r["val_rmse"], "test": r["test_rmse"], "epochs": r["epochs"],
                         "train_seconds": r["train_seconds"], "from": f"{path.name} ({design}, seed {seed})"}
            for r in rows if r["set"] == "freesolv" and r["design"] == design and r["seed"] == seed}


def paired(a: list[float], b: list[float]) -> dict:
    """Mean of a - b and its standard error over the splits (sample std / sqrt(n))."""
    d = [x - y for x, y in zip(a, b, strict=True)]
    n = len(d)
    mean = sum(d) / n
    se = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1) / n) if n > 1 else float("nan")
    return {"mean": round(mean, 4), "se": round(se, 4), "n": n}


def arm_runs(pattern: str) -> tuple[list[dict], dict[tuple[int, int], dict], str]:
    """The ``molecule_pretrain.py`` JSONs a glob names: per (split, seed), val and test; and their
    test metric (``test_rmse``, or B3DB's ``roc_auc``), the same in every file."""
    import glob

    inputs, out, metrics = [], {}, set()
    for path in sorted(glob.glob(pattern)):
        data = json.loads(Path(path).read_text())
        metrics.add(data["metric"])
        inputs.append({"file": path, "command": data["command"], "checkpoint": data["checkpoint"],
                       "loadavg_at_start": data["loadavg_at_start"]})
        for row in data["splits"]:
            for run in (r for r in row.values() if isinstance(r, dict)):
                test = run["roc_auc"] if data["metric"] == "roc_auc" else run["test"]["test_rmse"]
                out[row["split"], data.get("seed") or 0] = {"val": run["best_val"], "test": test}
    if not out:
        raise SystemExit(f"--arm {pattern!r}: no molecule_pretrain.py JSON matches")
    if len(metrics) > 1:
        raise SystemExit(f"--arm {pattern!r}: the files hold different metrics, {sorted(metrics)}")
    return inputs, out, metrics.pop()


def compare_arms(specs: list[str], out: Path) -> dict:
    """Each arm's mean val / test over the (split, seed) pairs all arms have, the paired
    differences of every arm against the first +- s.e., and the arm validation chooses
    (lowest mean RMSE; with ROC-AUC on test, the highest mean validation accuracy)."""
    arms, inputs, metrics = {}, {}, set()
    for spec in specs:
        name, _, pattern = spec.partition("=")
        inputs[name], arms[name], metric = arm_runs(pattern)
        metrics.add(metric)
    if len(metrics) > 1:
        raise SystemExit(f"the arms hold different metrics, {sorted(metrics)}: compare runs of one set")
    metric = metrics.pop()
    common = sorted(set.intersection(*(set(r) for r in arms.values())))
    mean = {a: {k: round(sum(r[p][k] for p in common) / len(common), 4) for k in ("val", "test")}
            for a, r in arms.items()}
    first = next(iter(arms))
    pairs = {f"{a} - {first}": {k: paired([arms[a][p][k] for p in common], [arms[first][p][k] for p in common])
                                for k in ("val", "test")} for a in arms if a != first}
    chosen = (max if metric == "roc_auc" else min)(arms, key=lambda a: mean[a]["val"])
    print(f"{metric} over {len(common)} (split, seed) pairs: " + "; ".join(
        f"{a} val {m['val']:.3f} test {m['test']:.3f}" for a, m in mean.items()) + f"; chosen on validation: {chosen}")
    for name, p in pairs.items():
        print(f"  {name}: val {p['val']['mean']:+.3f} +- {p['val']['se']:.3f}, test {p['test']['mean']:+.3f} "
              f"+- {p['test']['se']:.3f}")
    result = {"metric": metric, "arms": {a: {f"split{s}_seed{e}": r[s, e] for s, e in common} for a, r in arms.items()},
              "inputs": inputs, "compared_on": [list(p) for p in common], "mean": mean, "paired": pairs,
              "chosen_on_validation": chosen}
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return result


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default=str(RESULTS / "molecule_trunk_scratch_10k.json"))
    ap.add_argument("--large", nargs="*", default=[str(RESULTS / "molecule_trunk_large.json")])
    ap.add_argument("--trunk", default="", help="what the large trunk is (corpus, epochs, command), for the JSON")
    ap.add_argument("--more", nargs="*", default=[], help="more molecule_pretrain.py JSONs of the 10 k trunk")
    ap.add_argument("--designs", default=str(RESULTS / "molecule_designs.json"),
                    help="scratch runs of splits that have none here, taken from these design rows")
    ap.add_argument("--design", default="3d+surface+additive", help="the shipped config's design")
    ap.add_argument("--arm", action="append", default=[], metavar="NAME=GLOB",
                    help="an arm and its molecule_pretrain.py JSONs (repeat; the first is the reference)")
    ap.add_argument("--out", default=str(RESULTS / "molecule_trunk.json"))
    args = ap.parse_args(argv)
    if args.arm:
        compare_arms(args.arm, Path(args.out))
        return
    base, runs = rows_of(Path(args.base), {"none": "scratch", "pretrained": "trunk_10k"})
    inputs = [base]
    for path, renames in [*((Path(m), {"pretrained": "trunk_10k"}) for m in args.more),
                          *((Path(m), {"pretrained": "trunk_large"}) for m in args.large)]:
        if path.exists():
            data, more = rows_of(path, renames)
            inputs.append(data)
            for split, r in more.items():
                runs.setdefault(split, {}).update(r)
    # the scratch arm of splits not run here: the design rows, checked equal where both exist
    reference = designs_scratch(Path(args.designs), args.design)
    checked = {s: {"here": runs[s]["scratch"], "designs": reference[s]} for s in runs
               if "scratch" in runs[s] and s in reference}
    for s, r in runs.items():
        if "scratch" not in r and s in reference:
            r["scratch"] = reference[s]
    # the splits every arm that ran has (an arm missing on some split is compared on the others: said)
    splits = sorted(s for s, r in runs.items() if {"scratch", "trunk_10k"} <= set(r))
    arms = [i for i in ("scratch", "trunk_10k", "trunk_large") if any(i in runs[s] for s in splits)]
    common = [s for s in splits if all(i in runs[s] for i in arms)]
    mean = {i: {k: round(sum(runs[s][i][k] for s in common) / len(common), 4) for k in ("val", "test")}
            for i in arms}
    pairs = {f"{a} - {b}": {k: paired([runs[s][a][k] for s in common], [runs[s][b][k] for s in common])
                            for k in ("val", "test")}
             for a, b in [("trunk_10k", "scratch"), ("trunk_large", "scratch"), ("trunk_large", "trunk_10k")]
             if a in arms and b in arms}
    chosen = min(arms, key=lambda i: mean[i]["val"])
    print(f"FreeSolv RMSE over splits {common} (seed 0): " + "; ".join(
        f"{i} val {mean[i]['val']:.3f} test {mean[i]['test']:.3f}" for i in arms) + f"; chosen on validation: {chosen}")
    for name, p in pairs.items():
        print(f"  {name}: test {p['test']['mean']:+.3f} +- {p['test']['se']:.3f}, val {p['val']['mean']:+.3f} "
              f"+- {p['val']['se']:.3f}")
    Path(args.out).write_text(json.dumps({
        "command": "python bench/molecule_trunk.py", "inputs": [{"command": d["command"], "checkpoint": d["checkpoint"],
                                                                 "loadavg_at_start": d["loadavg_at_start"]}
                                                                for d in inputs],
        "config": base["config"], "large_trunk": args.trunk, "splits": {str(s): runs[s] for s in splits}, "compared_on": common,
        "mean": mean, "paired": pairs, "chosen_on_validation": chosen,
        "scratch_reproduced": {str(s): c for s, c in checked.items()}}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
