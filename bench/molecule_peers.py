"""The descriptor models chemists try first, tuned on validation, beside vecset's chosen design
(issue #58, item 1): on each set's splits (the shipped config's ``MoleculeDataModule``, through
``chemprop_baseline.data_module``: the molecules ``bench/molecule_designs.py`` trained and tested on)

    svr     SVR with an RBF kernel (SVC for B3DB) on the training split's standardized RDKit 2-D
            descriptors (``DescriptorScaler``: NaN -> mean, z clipped at +-5), the non-constant
            ones; the regression target standardized too; grid C x gamma (multiples of 1/F) x
            epsilon (in target standard deviations)
    hgb     scikit-learn's HistGradientBoosting on the raw descriptors (NaN handled natively),
            300 iterations, no early stopping; grid learning rate x leaf count x l2
    forest  RandomForest (500 trees, random_state 0) on the raw descriptors; grid max_features
    chemprop  Chemprop 2.3.1 defaults, the rows of ``bench/results/chemprop_baseline.json`` (not run here)

Each peer's setting is the grid point with the best validation metric of its split (RMSE; B3DB:
ROC-AUC of the validation molecules); the best peer of a set is the one with the best mean
validation metric over the splits. Then the paired difference of vecset's chosen design
(``chosen`` in ``bench/results/molecule_designs.json``) against that peer: per split, vecset's
mean test metric over its seeds minus the peer's; mean +- standard error over the splits
(FreeSolv's 5). A set with one split pairs each vecset seed with the peer instead: that s.e.
holds vecset's seed-to-seed spread only, not the test split's sampling.

Writes ``bench/results/molecule_peers.json``, keeping the rows of the sets and peers it did not
redo and choosing from all of them (``rows``: set, peer, split, the chosen setting, its
validation and test metric, the whole grid's validation metrics, CPU seconds; ``best_peer`` and
``paired`` per set; ``commands``: the command that made each set's peer's rows) and prints a table.

    python bench/molecule_peers.py                       # the three sets: CPU minutes (B3DB's gradient boosting the most)
    python bench/molecule_peers.py --sets freesolv --peers svr hgb   # those rows redone, the rest kept
"""

from __future__ import annotations

import argparse
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
from vecset.encoders.graph import DescriptorScaler  # noqa: E402
from vecset.pipelines.molecules.blend import GRIDS, grid_points, non_constant, pick  # noqa: E402

DESIGNS_JSON = ROOT / "bench" / "results" / "molecule_designs.json"
CHEMPROP_JSON = ROOT / "bench" / "results" / "chemprop_baseline.json"
# GRIDS (small, as a chemist would try them; gamma in multiples of 1/F) are the package's, the
# ones `vecset pack --blend` tunes
PEERS = (*GRIDS, "chemprop")


def matrices(name: str, split: int) -> dict:
    """The split's raw descriptors (n, 217) and targets, and the standardized non-constant ones."""
    dm = data_module(name, split)
    out: dict = {"classification": dm.class_names is not None}
    for part in ("train", "val", "test"):
        items = dm.splits[part]
        out[f"raw_{part}"] = np.clip(np.stack([it["raw_desc"] for it in items]), -1e30, 1e30)  # float32 range
        out[f"y_{part}"] = np.array([int(it["y"]) if out["classification"] else float(it["y"][0]) for it in items])
    keep = non_constant(out["raw_train"])
    scaler = DescriptorScaler().fit(out["raw_train"][:, keep])
    for part in ("train", "val", "test"):
        out[f"z_{part}"] = np.stack([scaler.transform(r).numpy() for r in out[f"raw_{part}"][:, keep]])
    out["kept"] = int(len(keep))
    return out


def score(classification: bool, truth: np.ndarray, pred: np.ndarray) -> float:
    """RMSE, or ROC-AUC of a score that grows with class 1 (rank-based: an SVC's decision value serves)."""
    if classification:
        from sklearn.metrics import roc_auc_score

        return float(roc_auc_score(truth, pred))
    return float(np.sqrt(np.mean((pred - truth) ** 2)))


def fit_predict(peer: str, point: dict, m: dict) -> tuple[np.ndarray, np.ndarray]:
    """One grid point of ``peer`` fit on the training split: its (validation, test) predictions."""
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.svm import SVC, SVR

    cls = m["classification"]
    if peer == "svr":
        gamma = point["gamma_x"] / m["kept"]
        if cls:  # the classifier's grid has no epsilon (peer_grid)
            model = SVC(C=point["C"], gamma=gamma).fit(m["z_train"], m["y_train"])
            return model.decision_function(m["z_val"]), model.decision_function(m["z_test"])
        mu, sd = m["y_train"].mean(), m["y_train"].std()
        model = SVR(C=point["C"], gamma=gamma, epsilon=point["epsilon"]).fit(m["z_train"], (m["y_train"] - mu) / sd)
        return model.predict(m["z_val"]) * sd + mu, model.predict(m["z_test"]) * sd + mu
    if peer == "hgb":
        kind = HistGradientBoostingClassifier if cls else HistGradientBoostingRegressor
        model = kind(max_iter=300, early_stopping=False, random_state=0, **point)
    elif peer == "forest":
        kind = RandomForestClassifier if cls else RandomForestRegressor
        model = kind(500, random_state=0, n_jobs=1, **point)
    else:
        raise ValueError(f"no such peer {peer!r}")
    model.fit(m["raw_train"], m["y_train"])
    if cls:
        return model.predict_proba(m["raw_val"])[:, 1], model.predict_proba(m["raw_test"])[:, 1]
    return model.predict(m["raw_val"]), model.predict(m["raw_test"])


def peer_grid(peer: str, classification: bool) -> list[dict]:
    grid = dict(GRIDS[peer])
    if peer == "svr" and classification:
        grid.pop("epsilon")
    return grid_points(grid)


def tune(name: str, split: int, peer: str, m: dict) -> dict:
    """Every grid point fit on train and scored on validation; the pick's test metric."""
    ms = SETS[name]
    lower = not m["classification"]
    scored, t0, tests = [], time.process_time(), {}
    for i, point in enumerate(peer_grid(peer, m["classification"])):
        val_pred, test_pred = fit_predict(peer, point, m)
        scored.append((point, score(m["classification"], m["y_val"], val_pred)))
        tests[i] = score(m["classification"], m["y_test"], test_pred)  # read only for the pick
    point, val = pick(scored, lower)
    val_key, test_key = ("val_auc", ms.test) if m["classification"] else ("val_rmse", ms.test)
    return {"set": name, "peer": peer, "split": split, "setting": point, val_key: val,
            test_key: tests[[p for p, _ in scored].index(point)], "descriptors": m["kept"],
            "grid": [{**p, val_key: v} for p, v in scored], "cpu_seconds": round(time.process_time() - t0, 1),
            "n": {k: len(m[f"y_{k}"]) for k in ("train", "val", "test")}}


def chemprop_rows(name: str) -> list[dict]:
    """Chemprop's measured rows of the set (defaults; seeds as run), in this file's row form."""
    if not CHEMPROP_JSON.is_file():
        return []
    rows = json.loads(CHEMPROP_JSON.read_text())["rows"]
    ms = SETS[name]
    val_key = "val_auc" if ms.test == "test_auc" else "val_rmse"
    return [{"set": name, "peer": "chemprop", "split": r["split"], "seed": r["seed"], "setting": "defaults",
             val_key: r[val_key], ms.test: r[ms.test], "epochs": r["epochs"]} for r in rows if r["set"] == name]


def per_split(rows: list[dict], key: str) -> dict[int, float]:
    """Each split's mean of ``key`` over its rows (seeds)."""
    splits = sorted({r["split"] for r in rows})
    return {s: statistics.fmean(r[key] for r in rows if r["split"] == s) for s in splits}


def best_peer(rows: list[dict], lower_is_better: bool) -> str:
    """The peer with the best mean (over splits) validation metric."""
    val_key = next(k for k in rows[0] if k.startswith("val_"))
    means = {p: statistics.fmean(per_split([r for r in rows if r["peer"] == p], val_key).values())
             for p in dict.fromkeys(r["peer"] for r in rows)}
    return (min if lower_is_better else max)(means, key=means.get)


def paired(vecset: list[dict], peer: list[dict], metric: str) -> dict:
    """vecset minus the peer on the test metric, paired per split (vecset's mean over seeds against the
    peer's); with one split, per vecset seed against the peer's mean. Mean, s.e. and the units."""
    v_split, p_split = per_split(vecset, metric), per_split(peer, metric)
    common = sorted(set(v_split) & set(p_split))
    if not common:
        raise ValueError("no split in common between vecset's rows and the peer's")
    if len(common) > 1:
        diffs, unit = [v_split[s] - p_split[s] for s in common], "split"
    else:
        diffs, unit = [r[metric] - p_split[common[0]] for r in vecset if r["split"] == common[0]], "seed"
    se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else float("nan")
    return {"difference": statistics.fmean(diffs), "se": se, "unit": unit, "n": len(diffs), "diffs": diffs,
            "vecset_test": statistics.fmean(v_split[s] for s in common),
            "peer_test": statistics.fmean(p_split[s] for s in common)}


def merged(path: Path, rows: list[dict], commands: dict[str, str]) -> tuple[list[dict], dict[str, str]]:
    """``rows`` (and the command per ``set/peer``) with those of the JSON at ``path`` whose set and
    peer this run did not redo: ``--peers svr`` reruns the SVR alone and keeps the other peers."""
    if not path.is_file():
        return rows, commands
    old = json.loads(path.read_text())
    redone = {(r["set"], r["peer"]) for r in rows}
    kept = [r for r in old.get("rows", []) if (r["set"], r["peer"]) not in redone]
    return kept + rows, {k: v for k, v in old.get("commands", {}).items()
                         if tuple(k.split("/")) not in redone} | commands


def compare(rows: list[dict], designs: dict) -> tuple[dict, dict]:
    """Per set in ``rows``: the best peer on validation and vecset's chosen design paired with it."""
    best, pairs = {}, {}
    for name in dict.fromkeys(r["set"] for r in rows):
        ms = SETS[name]
        mine = [r for r in rows if r["set"] == name]
        best[name] = best_peer(mine, ms.test != "test_auc")
        chosen = designs["chosen"][name]["design"]
        vecset = [r for r in designs["rows"] if r["set"] == name and r["design"] == chosen]
        pairs[name] = {"design": chosen, "peer": best[name], "metric": ms.test,
                       **paired(vecset, [r for r in mine if r["peer"] == best[name]], ms.test)}
    return best, pairs


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    ap.add_argument("--peers", nargs="+", default=list(PEERS), choices=list(PEERS))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "molecule_peers.json"))
    args = ap.parse_args(argv)
    designs = json.loads(DESIGNS_JSON.read_text())
    out = Path(args.out)
    command = "python bench/molecule_peers.py " + " ".join(sys.argv[1:] if argv is None else argv)
    rows: list[dict] = []
    for name in args.sets:
        ms = SETS[name]
        for split in ms.splits:
            m = matrices(name, split) if set(args.peers) & set(GRIDS) else None
            for peer in args.peers:
                if peer == "chemprop":
                    continue
                row = tune(name, split, peer, m)
                rows.append(row)
                val_key = "val_auc" if m["classification"] else "val_rmse"
                print(f"{name} split {split} {peer}: {row['setting']} {val_key} {row[val_key]:.4f} "
                      f"{ms.test} {row[ms.test]:.4f} ({row['cpu_seconds']} CPU s)", flush=True)
        if "chemprop" in args.peers:
            rows += chemprop_rows(name)
        # after every set: a cut-off run keeps what it finished
        done, commands = merged(out, rows, {f"{name}/{p}": command for name in args.sets for p in args.peers})
        best, pairs = compare(done, designs)
        result = {"command": command, "commands": commands, "grids": GRIDS,
                  "designs_json": str(DESIGNS_JSON.relative_to(ROOT)), "rows": done, "best_peer": best, "paired": pairs}
        out.write_text(json.dumps(result, indent=1))
    print(f"\n{'set':<11} {'peer':<9} {'val':>7} {'test':>7}   (per-split means; RMSE, B3DB ROC-AUC)")
    for name in result["paired"]:
        mine = [r for r in result["rows"] if r["set"] == name]
        val_key = next(k for k in mine[0] if k.startswith("val_"))
        for peer in dict.fromkeys(r["peer"] for r in mine):
            theirs = [r for r in mine if r["peer"] == peer]
            print(f"{name:<11} {peer:<9} {statistics.fmean(per_split(theirs, val_key).values()):>7.3f} "
                  f"{statistics.fmean(per_split(theirs, SETS[name].test).values()):>7.3f}"
                  f"{'  <- best on validation' if peer == result['best_peer'][name] else ''}")
        p = result["paired"][name]
        print(f"{name:<11} vecset {p['design']} {p['vecset_test']:.3f} vs {p['peer']} {p['peer_test']:.3f}: "
              f"difference {p['difference']:+.3f} +- {p['se']:.3f} (s.e. over {p['n']} {p['unit']}s)")
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main()
