"""What pretraining on the whole MOSES training set would cost on this CPU (issue #58, item 2):
measured on a sample, one thread, before any large run is started.

The corpus: member ``moses/dataset/data/train.csv.gz`` of the ``molsets`` 0.3.1 wheel (MIT; 1,584,663
SMILES; ``scripts/make_moses_csv.py`` draws ``moses_10k.csv`` from it). The sample: the first ``--n``
SMILES in ``numpy.random.default_rng(0).permutation`` order (make_moses_csv's draw, without its
exclusion of the shipped sets: that changes which molecules, not their cost). Measured, in CPU
seconds of this process (``time.process_time``: what a loaded machine does not inflate) and wall:

    featurize   the pretraining featurizer (``MoleculePretrainDataModule``'s: graph + the 217 RDKit
                descriptors) through ``featurize_smiles`` with a ``FeatureCache``: molecules/s, the
                cache file's bytes per molecule, and molecules/s of reading it back
    memory      the resident memory per molecule of the items a data module holds (read from the
                cache in a fresh interpreter)
    graph       the graph alone (``descriptors: false``): molecules/s
    descriptors the pretext's targets alone (parse + ``molecule_descriptors``, CheMeleon's pretext:
                predict descriptors): molecules/s
    train       ``vecset fit --config configs/pretrain_molecules.yaml`` on the sample (masked atoms +
                descriptor regression), ``--steps`` optimizer steps of 64 molecules after
                ``--warm`` untimed ones: molecules/s

and from them the CPU hours of featurizing and of one epoch, and the memory, for 500 k and 1,584,663 molecules.
Writes ``bench/results/molecule_pretrain_cost.json``.

    pip download --no-deps molsets==0.3.1 -d /tmp/moses
    OMP_NUM_THREADS=1 python bench/molecule_pretrain_cost.py --wheel /tmp/moses/molsets-0.3.1-py3-none-any.whl
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytorch_lightning as pl

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MEMBER = "moses/dataset/data/train.csv.gz"
SIZES = {"500k": 500_000, "all": 1_584_663}
STEP_TIMES: list[tuple[float, float]] = []  # (process, wall) seconds at each training batch's start


def moses_smiles(wheel: Path) -> list[str]:
    """The MOSES training SMILES from the wheel, in file order."""
    with zipfile.ZipFile(wheel) as z:
        raw = gzip.decompress(z.read(MEMBER)).decode()
    return [r["SMILES"] for r in csv.DictReader(io.StringIO(raw))]


def sample(smiles: list[str], n: int, seed: int = 0) -> list[str]:
    """The first ``n`` in ``default_rng(seed).permutation`` order."""
    return [smiles[i] for i in np.random.default_rng(seed).permutation(len(smiles))[:n]]


def timed(fn) -> tuple[object, float, float]:
    """``fn()``, its CPU (process) seconds and wall seconds."""
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def rate(n: int, cpu: float, wall: float) -> dict:
    return {"molecules": n, "cpu_seconds": round(cpu, 2), "wall_seconds": round(wall, 2),
            "per_cpu_second": round(n / cpu, 1), "per_wall_second": round(n / wall, 1)}


def featurization(smiles: list[str], cache_dir: Path) -> dict:
    from vecset.encoders.graph import (
        FeatureCache,
        MoleculeFeaturizer,
        featurize_smiles,
        molecule_descriptors,
        parse_smiles,
    )

    cache = FeatureCache(cache_dir)
    full = MoleculeFeaturizer(descriptors=True)  # MoleculePretrainDataModule's (max_atoms 100, max_dist 8)
    mols, cpu, wall = timed(lambda: featurize_smiles(smiles, full, cache))
    out = {"featurize": rate(len(smiles), cpu, wall)}
    key = cache.key(list(dict.fromkeys(smiles)), full.settings())
    size = cache.path(key).stat().st_size
    out["featurize"]["cache_bytes_per_molecule"] = round(size / len(smiles))
    _, cpu, wall = timed(lambda: cache.load(key, list(dict.fromkeys(smiles))))
    out["cache_read"] = rate(len(smiles), cpu, wall)
    out["invalid"] = sum(not hasattr(m, "graph") for m in mols.values())
    out["memory"] = memory(smiles, cache_dir)
    graph_only = MoleculeFeaturizer(descriptors=False)
    _, cpu, wall = timed(lambda: [graph_only(s) for s in smiles])
    out["graph"] = rate(len(smiles), cpu, wall)
    _, cpu, wall = timed(lambda: [molecule_descriptors(parse_smiles(s, 100)) for s in smiles])
    out["descriptors"] = rate(len(smiles), cpu, wall)
    return out


MEMORY_CODE = """
import gc, sys
from vecset.encoders.graph import FeatureCache, MoleculeFeaturizer, read_molecule_csv
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
MoleculeFeaturizer(descriptors=True)("CCO")  # RDKit and torch loaded before the first reading
gc.collect(); before = rss()
table = read_molecule_csv(sys.argv[1], MoleculeFeaturizer(descriptors=True), cache=FeatureCache(sys.argv[2]))
gc.collect(); print(len(table.items), rss() - before)
"""


def memory(smiles: list[str], cache_dir: Path) -> dict:
    """The resident memory the data module's item list grows by per molecule, read from the cache
    (what a pretraining run holds for all its molecules), in a fresh interpreter."""
    import subprocess

    csv_path = cache_dir.parent / "memory.csv"
    csv_path.write_text("smiles\n" + "".join(s + "\n" for s in smiles))
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-c", MEMORY_CODE, str(csv_path), str(cache_dir)], capture_output=True,
                         text=True, env=env, check=True).stdout.split()
    n, grown = int(out[-2]), int(out[-1])
    return {"molecules": n, "rss_bytes_per_molecule": round(grown / n)}


class StepClock(pl.Callback):
    """Notes the process and wall clock at each training batch's start (the fit names it by its
    class path)."""

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        STEP_TIMES.append((time.process_time(), time.perf_counter()))


def training(smiles: list[str], work: Path, warm: int, steps: int, batch_size: int = 64) -> dict:
    """``vecset fit`` of the pretraining config on ``smiles`` in this process; molecules/s over the
    steps after ``warm``."""
    from bench import (
        molecule_pretrain_cost as me,  # the callback's module (this one may run as __main__)
    )
    from vecset.pipelines.cli import run_cli

    times = me.STEP_TIMES
    csv_path = work / "sample.csv"
    csv_path.write_text("smiles\n" + "".join(s + "\n" for s in smiles))
    times.clear()
    cwd = os.getcwd()
    os.chdir(work)
    try:
        run_cli(["fit", "--config", str(ROOT / "configs" / "pretrain_molecules.yaml"),
                 f"--data.init_args.csv_path={csv_path}", f"--data.init_args.cache_dir={work / 'cache'}",
                 f"--data.init_args.batch_size={batch_size}", f"--trainer.max_steps={warm + steps + 1}",
                 "--trainer.limit_val_batches=0", "--trainer.enable_progress_bar=false",
                 "--trainer.callbacks+=bench.molecule_pretrain_cost.StepClock"])
    finally:
        os.chdir(cwd)
    if len(times) < warm + steps + 1:
        raise SystemExit(f"the fit ran {len(times)} steps, {warm + steps + 1} needed: use a larger --n")
    (c0, w0), (c1, w1) = times[warm], times[warm + steps]
    return rate(steps * batch_size, c1 - c0, w1 - w0) | {"steps": steps, "batch_size": batch_size}


def sizing(res: dict) -> dict:
    """CPU hours of featurizing and of one training epoch, per corpus size, at the measured rates."""
    out = {}
    for name, n in SIZES.items():
        feat = n / res["featurize"]["per_cpu_second"] / 3600
        epoch = n / res["train"]["per_cpu_second"] / 3600
        out[name] = {"molecules": n, "featurize_cpu_hours": round(feat, 2), "epoch_cpu_hours": round(epoch, 2),
                     "cache_gb": round(n * res["featurize"]["cache_bytes_per_molecule"] / 1e9, 2),
                     "memory_gb": round(n * res["memory"]["rss_bytes_per_molecule"] / 1e9, 1)}
    return out


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel", required=True, type=Path, help="molsets-0.3.1-py3-none-any.whl")
    ap.add_argument("--n", type=int, default=3000, help="molecules featurized (and trained on)")
    ap.add_argument("--warm", type=int, default=5, help="training steps not timed (the first are slower)")
    ap.add_argument("--steps", type=int, default=30, help="training steps timed")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "molecule_pretrain_cost.json")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    corpus = moses_smiles(args.wheel)
    smiles = sample(corpus, args.n)
    with tempfile.TemporaryDirectory() as tmp:
        res = {"command": "python bench/molecule_pretrain_cost.py " + " ".join(sys.argv[1:] if argv is None else argv),
               "corpus_molecules": len(corpus), "sample": args.n, "threads": torch.get_num_threads(),
               "loadavg_at_start": Path("/proc/loadavg").read_text().split()[:3],
               **featurization(smiles, Path(tmp) / "cache")}
        res["train"] = training(smiles, Path(tmp), args.warm, args.steps)
    res["loadavg_at_end"] = Path("/proc/loadavg").read_text().split()[:3]
    res["sizing"] = sizing(res)
    args.out.write_text(json.dumps(res, indent=1))
    for k in ("featurize", "cache_read", "graph", "descriptors", "train"):
        print(f"{k:<12} {res[k]['per_cpu_second']:>8.1f} molecules per CPU second ({res[k]['per_wall_second']:.1f} per wall second)")
    for name, s in res["sizing"].items():
        print(f"{name:<5} {s['molecules']:>9}: featurize {s['featurize_cpu_hours']} CPU h ({s['cache_gb']} GB cache), "
              f"one epoch {s['epoch_cpu_hours']} CPU h, {s['memory_gb']} GB in memory")
    print(f"wrote {args.out}")
    return args.out


if __name__ == "__main__":
    main()
