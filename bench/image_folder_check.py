"""Does the convolutional tokenizer help ``configs/image_folder.yaml`` as it helped digits and
Fashion-MNIST? The config run as a user runs it, on an ImageFolder set written from Fashion-MNIST.

No photo set ships with vecset or a Debian package, so the check writes a stratified subset of
Fashion-MNIST's training images (``--per-class`` a class) and its whole test set as 28x28 grey
PNG files in the ImageFolder layout (``<root>/train/<class>/*.png``, ``<root>/test/<class>/*.png``),
then trains the config as shipped (32x32 RGB: ``convert: true`` turns the grey files into RGB; its
CCT tokenizer, ``ConvTokenizer``: 2 x [conv, ReLU, max-pool], 32 channels -> 8x8 = 64 vectors;
its flip + affine augmentation; validation 10% of train) against the same config with 4x4
patches in the encoder's slot (as many vectors), equal epochs, each seed.
Validation decides; test is read after.

    python bench/image_folder_check.py                       # 500 a class, 15 epochs, seed 0
    python bench/image_folder_check.py --variants cct --runs patches=runs/image_folder/version_2
                                      # read a finished run (of the same folder, epochs and seed) instead
    python bench/image_folder_check.py --per-class 50 --epochs 1 --out /tmp/x.json   # a quick look

Prints a table and writes ``bench/results/image_folder_check.json`` (one row a run: the variant,
seed, epochs, parameters, val_acc, test_acc, seconds, the command).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import run_fit  # noqa: E402
from bench.image_baselines import trainable_parameters  # noqa: E402

CONFIG = "configs/image_folder.yaml"
PATCHES = ["--model.init_args.encoder",
           "{class_path: vecset.encoders.PatchEncoder, init_args: {patch_size: 4, positional: sinusoidal}}"]
# key -> (the row's name, more vecset fit arguments): the config's CCT tokenizer, and 4x4 patches instead
VARIANTS = {"patches": ("patches 4x4", PATCHES), "cct": ("CCT tokenizer (2 layers, 32 channels)", [])}


def write_folder(root: Path, fashion_root: str, per_class: int, seed: int = 0) -> dict[str, int]:
    """Fashion-MNIST as PNG files in the ImageFolder layout under ``root``: ``per_class`` training
    images a class (a seeded draw) and the 10,000 test images. Returns the file count per split."""
    from PIL import Image

    from vecset.pipelines.images.fashion_mnist import class_names, find_files, read_split

    files = find_files(fashion_root)
    names = [n.replace("/", "-") for n in class_names()]  # "T-shirt/top" is no folder name
    rng = np.random.default_rng(seed)
    counts = {}
    for split in ("train", "test"):
        images, labels = read_split(*files[split])
        keep = np.arange(len(labels))
        if split == "train":
            keep = np.sort(np.concatenate([rng.choice(np.flatnonzero(labels.numpy() == c), per_class, replace=False)
                                           for c in range(len(names))]))
        for i in keep:
            folder = root / split / names[int(labels[i])]
            folder.mkdir(parents=True, exist_ok=True)
            Image.fromarray(images[i, 0].numpy(), mode="L").save(folder / f"{i:05d}.png")
        counts[split] = len(keep)
    return counts


def fit_args(folder: Path, epochs: int, seed: int, extra: list[str]) -> list[str]:
    return ["--data.init_args.root", str(folder), "--data.init_args.convert", "true", "--trainer.max_epochs",
            str(epochs), "--trainer.enable_progress_bar", "false", "--seed_everything", str(seed), "--plots", "false",
            *extra]


def run_summary(run_dir: Path) -> dict:
    """A run's ``results.json``; for a run that ended before writing it (after its test), the same
    fields from Lightning's ``metrics.csv`` and its best checkpoint (no ``wall_seconds`` then)."""
    if (run_dir / "results.json").is_file():
        return json.loads((run_dir / "results.json").read_text())
    import csv

    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    val = [float(r["val_acc"]) for r in rows if r.get("val_acc")]
    test = [float(r["test_acc"]) for r in rows if r.get("test_acc")]
    best = sorted((run_dir / "checkpoints").glob("best-*.ckpt"))
    if not val or len(test) != 1 or len(best) != 1:
        raise SystemExit(f"{run_dir}: no results.json, and metrics.csv / checkpoints/best-*.ckpt do not give one "
                         f"best validation, one test accuracy and one best checkpoint")
    return {"best_val": max(val), "test": {"test_acc": test[0]}, "epochs": len(val), "wall_seconds": None,
            "checkpoint": str(best[0])}


def run_row(key: str, run_dir: Path, seed: int, args: list[str], folder: Path, cpu_seconds: float | None) -> dict:
    """One run's row from its ``results.json`` (``run_summary``)."""
    out = run_summary(run_dir)
    return {"variant": VARIANTS[key][0], "seed": seed, "epochs": out["epochs"], "params": trainable_parameters(out["checkpoint"]),
            "val_acc": out["best_val"], "test_acc": out["test"]["test_acc"], "train_seconds": out["wall_seconds"],
            "cpu_seconds": cpu_seconds, "run": str(run_dir),
            "command": f"vecset fit --config {CONFIG} " + " ".join(
                a if " " not in a else repr(a) for a in args).replace(str(folder), "<folder>")}


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-class", type=int, default=500, help="training images a class")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=list(VARIANTS))
    ap.add_argument("--runs", nargs="+", default=[], metavar="KEY=DIR",
                    help="finished run directories to read instead of training (one seed)")
    ap.add_argument("--fashion-root", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "image_folder_check.json"))
    args = ap.parse_args(argv)
    given = dict(r.split("=", 1) for r in args.runs)
    unknown = set(given) - set(VARIANTS)
    if unknown:
        ap.error(f"--runs: unknown variant(s) {sorted(unknown)}; expected {sorted(VARIANTS)}")
    if given and len(args.seeds) != 1:
        ap.error("--runs reads one seed's runs: give one --seeds")
    folder = Path(tempfile.mkdtemp(prefix="vecset_image_folder_"))
    rows = []
    try:
        counts = write_folder(folder, args.fashion_root, args.per_class)
        print(f"wrote {counts['train']} training and {counts['test']} test PNG files under {folder}")
        for seed in args.seeds:
            for key in sorted(set(args.variants) | set(given), key=list(VARIANTS).index):
                a = fit_args(folder, args.epochs, seed, VARIANTS[key][1])
                if key in given:
                    rows.append(run_row(key, Path(given[key]), seed, a, folder, None))
                else:
                    res = run_fit(CONFIG, a)
                    if res["returncode"]:
                        raise SystemExit(f"{key}: vecset fit failed: {res['error']}\n{res.get('output_tail', '')}")
                    rows.append(run_row(key, res["run_dir"], seed, a, folder, res["cpu_seconds"]))
                r = rows[-1]
                print(f"  {r['variant']}, seed {seed}: val {r['val_acc']:.4f} test {r['test_acc']:.4f} "
                      f"({r['train_seconds']} s)", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"\n{'variant':<40}{'val acc (mean)':>16}{'test acc (mean)':>17}{'train s':>9}")
    summary = {}
    for name in dict.fromkeys(r["variant"] for r in rows):
        mine = [r for r in rows if r["variant"] == name]
        summary[name] = {k: statistics.mean(r[k] for r in mine) for k in ("val_acc", "test_acc")}
        secs = [r["train_seconds"] for r in mine if r["train_seconds"] is not None]
        summary[name]["train_seconds"] = statistics.mean(secs) if secs else None
        s = summary[name]
        print(f"{name:<40}{s['val_acc']:>16.4f}{s['test_acc']:>17.4f}{s['train_seconds'] or '-':>9}")
    chosen = max(summary, key=lambda n: summary[n]["val_acc"])
    print(f"validation chooses: {chosen}")
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "command": "python bench/image_folder_check.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "data": f"Fashion-MNIST as PNG: {args.per_class} training images a class (seeded draw), the 10,000 test images",
        "machine": f"{os.cpu_count()} CPU cores; threads {os.environ.get('OMP_NUM_THREADS', 'default')}",
        "loadavg_at_end": list(os.getloadavg()), "rows": rows, "means": summary, "chosen_on_validation": chosen,
    }, indent=2))
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
