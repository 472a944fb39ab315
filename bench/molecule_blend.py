"""vecset's trained molecule models blended with the descriptor peers (issue #58): does the
attention model carry what the descriptor models miss?

Per split: each vecset run's checkpoint (the one its validation chose) predicts the split's
validation and test molecules through its predictor (``vecset pack``'s class, as a user's
``vecset predict`` would); the peers of ``bench/molecule_peers.py`` (SVR, HGB, forest) are tuned
on the same validation molecules and predict them too. Then blends ``w * a + (1 - w) * b``, the
weight ``w`` from 0 to 1 in steps of 0.05 chosen on the split's validation metric, the test read
at that weight:

    vecset+<peer>   one vecset run (per seed) with one peer
    ensemble        the mean of the split's vecset runs (the shipped predictors' deep ensemble)
    ensemble+<peer> that mean with one peer
    <peer>+<peer>   two peers (the control: what blending alone gives without attention)

B3DB blends probabilities, so its SVR (an SVC's decision value, not a probability) is tuned and
reported, but blended with nothing. Each blend family's best member on validation (the mean of
the splits' validation metric) is paired against the best single peer on validation and against
the best peer pair, per split (vecset's seeds averaged), or per vecset seed where a set has one
split; mean +- s.e. Prints a table; writes ``bench/results/molecule_blend.json``.

    python bench/molecule_blend.py --set freesolv \\
        --runs 'runs/bench_pretrain_freesolv_s{split}_none_scratch_seed{seed}_epyc/version_0' --splits 0 1 2 3 4
    python bench/molecule_blend.py --set solubility \\
        --runs 'runs/bench_pretrain_solubility_s0_pretrained_trunk500k_seed{seed}_epyc/version_0'
    python bench/molecule_blend.py --set b3db --run 0:0=runs/b3db/version_7 --run 0:1=runs/b3db/version_9 ...

Each run's predictions are checked against the test metric its ``results.json`` recorded.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.chemprop_baseline import data_module  # noqa: E402
from bench.molecule_designs import SETS  # noqa: E402
from bench.molecule_peers import fit_predict, matrices, peer_grid, pick, score  # noqa: E402
from vecset.pipelines.molecules.blend import WEIGHTS  # noqa: E402  (the weight of the first of the two)

PEERS = ("svr", "hgb", "forest")


def run_predictions(run_dir: Path, smiles: dict[str, list[str]], classification: bool) -> dict[str, np.ndarray]:
    """The run's chosen checkpoint through its predictor (``vecset predict --model RUN_DIR``'s):
    per part, the value (regression) or the probability of the second class, in the order of
    ``smiles[part]``."""
    from vecset.pipelines.pack import load_run

    predictor = load_run(run_dir)
    out = {}
    for part, items in smiles.items():
        rows = predictor.predict(items)
        bad = [r for r in rows if r["error"]]
        if bad:
            raise SystemExit(f"{run_dir}: {len(bad)} {part} molecules not predicted (first: {bad[0]})")
        key = f"P({predictor.classes[1]})" if classification else predictor.extra["targets"][0]
        out[part] = np.array([float(r[key]) for r in rows])
    return out


def recorded_test(run_dir: Path, classification: bool) -> float | None:
    """The test metric the run wrote itself: RMSE from ``results.json``, B3DB's ROC-AUC from its
    ``test_binary.json`` (None where the run wrote none)."""
    if classification:
        binary = next(run_dir.rglob("test_binary.json"), None)
        return json.loads(binary.read_text()).get("roc_auc") if binary else None
    return json.loads((run_dir / "results.json").read_text())["test"]["test_rmse"]


def tuned_peer(peer: str, m: dict) -> dict:
    """The peer's grid on validation (as molecule_peers.tune): its chosen setting and predictions."""
    cls = m["classification"]
    scored, preds = [], []
    for point in peer_grid(peer, cls):
        val_pred, test_pred = fit_predict(peer, point, m)
        scored.append((point, score(cls, m["y_val"], val_pred)))
        preds.append((val_pred, test_pred))
    point, val = pick(scored, lower_is_better=not cls)
    i = [p for p, _ in scored].index(point)
    return {"setting": point, "val": val, "val_pred": preds[i][0], "test_pred": preds[i][1]}


def blend(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], y_val: np.ndarray,
          y_test: np.ndarray, classification: bool) -> dict:
    """``w * a + (1 - w) * b`` with ``w`` the grid point of the best validation metric (the first
    of ties); its validation and test metric."""
    scored = [(w, score(classification, y_val, w * a[0] + (1 - w) * b[0])) for w in WEIGHTS]
    w, val = pick(scored, lower_is_better=not classification)
    return {"w": w, "val": val, "test": score(classification, y_test, w * a[1] + (1 - w) * b[1])}


def split_rows(name: str, split: int, runs: dict[int, Path], peers: list[str]) -> tuple[list[dict], dict]:
    """Every candidate's (validation, test) metric on one split: rows of (split, seed or None,
    candidate, w, val, test), and the peers' settings."""
    m = matrices(name, split)
    cls = m["classification"]
    dm = data_module(name, split)
    smiles = {part: [it["smiles"] for it in dm.splits[part]] for part in ("val", "test")}
    t0 = time.process_time()
    tuned = {p: tuned_peer(p, m) for p in peers}
    peer_seconds = time.process_time() - t0
    y_val, y_test = m["y_val"], m["y_test"]
    rows = [{"split": split, "seed": None, "candidate": p, "w": None, "val": t["val"],
             "test": score(cls, y_test, t["test_pred"])} for p, t in tuned.items()]
    blendable = [p for p in peers if not (cls and p == "svr")]
    pair = {p: (t["val_pred"], t["test_pred"]) for p, t in tuned.items()}
    for p, q in itertools.combinations(blendable, 2):
        rows.append({"split": split, "seed": None, "candidate": f"{p}+{q}", **blend(pair[p], pair[q], y_val, y_test, cls)})
    vecset = {}
    for seed, run_dir in sorted(runs.items()):
        pred = run_predictions(run_dir, smiles, cls)
        vecset[seed] = (pred["val"], pred["test"])
        test = score(cls, y_test, pred["test"])
        recorded = recorded_test(run_dir, cls)
        if recorded is not None and not math.isclose(test, recorded, abs_tol=2e-3):
            raise SystemExit(f"{run_dir}: the predictor's test metric {test:.4f} is not the run's {recorded:.4f}")
        rows.append({"split": split, "seed": seed, "candidate": "vecset", "w": None,
                     "val": score(cls, y_val, pred["val"]), "test": test, "run_dir": str(run_dir),
                     "recorded_test": recorded})
        for p in blendable:
            rows.append({"split": split, "seed": seed, "candidate": f"vecset+{p}",
                         **blend(vecset[seed], pair[p], y_val, y_test, cls)})
    if len(vecset) > 1:
        ens = tuple(np.mean([v[i] for v in vecset.values()], axis=0) for i in (0, 1))
        rows.append({"split": split, "seed": None, "candidate": "ensemble", "w": None,
                     "val": score(cls, y_val, ens[0]), "test": score(cls, y_test, ens[1])})
        for p in blendable:
            rows.append({"split": split, "seed": None, "candidate": f"ensemble+{p}",
                         **blend(ens, pair[p], y_val, y_test, cls)})
    settings = {p: t["setting"] for p, t in tuned.items()}
    return rows, {"peers": settings, "peer_cpu_seconds": round(peer_seconds, 1), "n": {k: len(m[f"y_{k}"]) for k in ("train", "val", "test")}}


def per_split(rows: list[dict], candidate: str, key: str) -> dict[int, float]:
    """The candidate's ``key`` per split, its seeds averaged."""
    mine = [r for r in rows if r["candidate"] == candidate]
    return {s: statistics.fmean(r[key] for r in mine if r["split"] == s) for s in sorted({r["split"] for r in mine})}


def best(rows: list[dict], candidates: list[str], lower: bool) -> str:
    """The candidate with the best mean (over splits) validation metric."""
    means = {c: statistics.fmean(per_split(rows, c, "val").values()) for c in candidates}
    return (min if lower else max)(means, key=means.get)


def paired(rows: list[dict], mine: str, theirs: str) -> dict:
    """``mine`` minus ``theirs`` on test, per split (seeds averaged); with one split, per seed of
    ``mine`` where it has seeds. Mean, s.e., unit."""
    a, b = per_split(rows, mine, "test"), per_split(rows, theirs, "test")
    splits = sorted(a)
    if len(splits) > 1:
        diffs, unit = [a[s] - b[s] for s in splits], "split"
    else:
        seeded = [r for r in rows if r["candidate"] == mine and r["seed"] is not None]
        diffs = [r["test"] - b[splits[0]] for r in seeded] or [a[splits[0]] - b[splits[0]]]
        unit = "seed" if seeded else "split"
    se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else float("nan")
    return {"mine": mine, "theirs": theirs, "mine_test": statistics.fmean(a.values()),
            "theirs_test": statistics.fmean(b.values()), "difference": statistics.fmean(diffs), "se": se,
            "unit": unit, "n": len(diffs), "diffs": diffs}


def summary(rows: list[dict], lower: bool) -> dict:
    """Each family's pick on validation, each paired with the best peer and the best peer pair."""
    cands = list(dict.fromkeys(r["candidate"] for r in rows))
    families = {"peer": [c for c in cands if c in PEERS],
                "peer pair": [c for c in cands if "+" in c and not c.startswith(("vecset", "ensemble"))],
                "vecset": [c for c in cands if c == "vecset"], "vecset+peer": [c for c in cands if c.startswith("vecset+")],
                "ensemble": [c for c in cands if c == "ensemble"],
                "ensemble+peer": [c for c in cands if c.startswith("ensemble+")]}
    picks = {f: best(rows, cs, lower) for f, cs in families.items() if cs}
    out = {"picks": picks, "means": {c: {"val": statistics.fmean(per_split(rows, c, "val").values()),
                                         "test": statistics.fmean(per_split(rows, c, "test").values())} for c in cands}}
    out["paired"] = {f: {ref: paired(rows, picks[f], picks[ref]) for ref in ("peer", "peer pair") if ref in picks}
                     for f in picks if f not in ("peer", "peer pair")}
    return out


def parse_runs(args: argparse.Namespace, splits: list[int]) -> dict[int, dict[int, Path]]:
    runs: dict[int, dict[int, Path]] = {}
    if args.runs:
        for split in splits:
            for seed in args.seeds:
                runs.setdefault(split, {})[seed] = ROOT / args.runs.format(split=split, seed=seed)
    for spec in args.run or []:
        try:
            where, path = spec.split("=", 1)
            split, seed = (int(x) for x in where.split(":"))
        except ValueError:
            raise SystemExit(f"--run {spec!r}: expected SPLIT:SEED=RUN_DIR") from None
        runs.setdefault(split, {})[seed] = ROOT / path
    for split, by_seed in runs.items():
        for seed, path in by_seed.items():
            if not (path / "results.json").is_file():
                raise SystemExit(f"split {split} seed {seed}: {path} has no results.json (not a finished run)")
    return runs


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", required=True, choices=list(SETS))
    ap.add_argument("--runs", help="the run folder per split and seed, with {split} and {seed}")
    ap.add_argument("--run", action="append", help="SPLIT:SEED=RUN_DIR (repeatable; beside or instead of --runs)")
    ap.add_argument("--splits", type=int, nargs="+", default=None, help="default: the set's (molecule_designs.SETS)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--peers", nargs="+", default=list(PEERS), choices=list(PEERS))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "molecule_blend.json"))
    args = ap.parse_args(argv)
    ms = SETS[args.set]
    runs = parse_runs(args, list(args.splits or ms.splits))
    if not runs:
        raise SystemExit("no runs: give --runs or --run")
    rows, info = [], {}
    for split in sorted(runs):
        r, info[split] = split_rows(args.set, split, runs[split], args.peers)
        rows += r
        print(f"{args.set} split {split}: " + "  ".join(f"{x['candidate']}{'' if x['seed'] is None else x['seed']} "
                                                        f"{x['test']:.3f}" for x in r), flush=True)
    lower = ms.lower_is_better
    result = {"command": "python bench/molecule_blend.py " + " ".join(sys.argv[1:] if argv is None else argv),
              "set": args.set, "metric": ms.test, "weights": list(WEIGHTS), "splits": info, "rows": rows,
              **summary(rows, lower)}
    out = Path(args.out)
    old = json.loads(out.read_text()) if out.is_file() else {}
    sets = {k: v for k, v in old.get("sets", {}).items() if k != args.set} | {args.set: result}
    out.write_text(json.dumps({"sets": sets}, indent=1, default=float))
    print(f"\n{args.set}: {ms.test}, means over splits (val / test); picks on validation")
    for c, v in result["means"].items():
        mark = "  <- " + ", ".join(f for f, p in result["picks"].items() if p == c) if c in result["picks"].values() else ""
        print(f"  {c:<18} {v['val']:.3f} / {v['test']:.3f}{mark}")
    for f, refs in result["paired"].items():
        for ref, p in refs.items():
            print(f"  {f} ({p['mine']}) - best {ref} ({p['theirs']}): {p['difference']:+.3f} +- {p['se']:.3f} "
                  f"(s.e. over {p['n']} {p['unit']}s)")
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main()
