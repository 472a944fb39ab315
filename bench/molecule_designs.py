"""Molecule attention designs side by side (issue #47): the 2-D graph of today (``2d``), plus 3-D
distances of one conformer per molecule as a per-head Gaussian-basis bias (``3d``: the data
module's ``geometry: true`` and ``GraphEncoder(geometry: distance_gaussian)``), plus GINE message
passing beside every block's attention (``gps``: ``Backbone(local_mp: gine)``), and both
(``both``); and ``3d`` with solvation atom features: Gasteiger partial charges (``3d+charges``: the
data module's ``charges: true``), and charges plus each atom's solvent-accessible surface
(``3d+surface``: ``surface: true`` too); and ``3d`` with an atomwise readout, the pooled prediction
plus a sum of per-atom contributions (``3d+additive``: ``SequenceHead(additive: true)``; with the
solvation features too: ``3d+surface+additive``); and ``3d``
trained on ten conformers per molecule, a random one at each draw (``3d+confs``: the data
module's ``conformers: 10``); and ``3d+surface+additive`` with its encoder and backbone starting
from the trunk pretrained on 500 k MOSES molecules (``+trunk500k``; every other design starts from
scratch), or with the physics token, one more vector of the set carrying the molecule's
generalized-Born energy, surface, logP, TPSA, H-bond counts and rotatable bonds (``+physics``: the
data module's ``features.physics: true``). Each run is ``vecset fit`` with the shipped config and its design's options:

    FreeSolv     configs/freesolv.yaml    random splits 0-4 x seeds 0-2   val_rmse, test_rmse
    solubility   configs/solubility.yaml  its published split x seeds 0-2 val_rmse, test_rmse
    B3DB         configs/b3db.yaml        scaffold split 0 x seeds 0-2    val_acc, test_auc (ROC-AUC)

Writes ``bench/results/molecule_designs.json``: ``rows`` (``set``, ``design``, ``split``, ``seed``,
the validation metric the checkpoint was chosen by, the test metric, the run directory) and
``chosen``: per set, the design with the best mean validation metric (validation only; the
test metric plays no part), and one figure, ``molecule_designs.png`` (test metric per split and
seed, one marker per design). Finished rows are kept: run it again and only the missing ones run.

    python bench/molecule_designs.py                      # everything: hours of CPU
    python bench/molecule_designs.py --sets freesolv --designs 2d 3d --splits 0 1
    python bench/molecule_designs.py --dry                # 40 FreeSolv molecules, 2 steps, in this process

The featurized molecules (with conformers for ``3d`` and ``both``) are cached on disk
(``encoders/graph/cache.py``): the first 3-D run of a set pays for the conformers, the rest read them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENC, BB, DATA = "--model.init_args.encoder.init_args", "--model.init_args.backbone.init_args", "--data.init_args"
HEAD = "--model.init_args.head.init_args"

# every design sets all its options: the shipped configs hold each set's winner, not the 2-D model
GEO_ON, GEO_OFF = [f"{DATA}.features.geometry=true", f"{ENC}.geometry=distance_gaussian"], [f"{DATA}.features.geometry=false", f"{ENC}.geometry=none"]
# the solvation atom features (encoders/graph/solvation.py): Gasteiger charges, then the atoms' surface too
PLAIN, CHARGES, SURFACE = ([f"{DATA}.features.charges={c}", f"{DATA}.features.surface={s}"]
                           for c, s in (("false", "false"), ("true", "false"), ("true", "true")))
# the readout: the pooled prediction alone, or plus a sum over atoms (SequenceHead's additive: the
# atomwise readout); conformers per molecule: one, or ten with a random one at each training draw
POOLED, ADDITIVE = [f"{HEAD}.additive=false"], [f"{HEAD}.additive=true"]
ONE, TEN = [f"{DATA}.features.conformers=1"], [f"{DATA}.features.conformers=10"]
# the start: from scratch, or the encoder and backbone from the trunk pretrained on 500 k MOSES molecules
TRUNK_500K = ROOT / "data" / "molecules" / "pretrained_moses_500k.ckpt"
SCRATCH = ["--model.init_args.init_from=null", "--model.init_args.init_parts=null"]
TRUNK = [f"--model.init_args.init_from={TRUNK_500K}", "--model.init_args.init_parts=[encoder, backbone]"]
# the physics token (encoders/graph/physics.py): the molecule's GB energy, surface, logP, TPSA, H-bond
# counts and rotatable bonds as one more vector of the set
NO_PHYSICS, PHYSICS = [f"{DATA}.features.physics=false"], [f"{DATA}.features.physics=true"]
DESIGNS: dict[str, list[str]] = {
    "2d": [*GEO_OFF, f"{BB}.local_mp=none", *PLAIN, *POOLED, *ONE, *SCRATCH, *NO_PHYSICS],
    "3d": [*GEO_ON, f"{BB}.local_mp=none", *PLAIN, *POOLED, *ONE, *SCRATCH, *NO_PHYSICS],
    "gps": [*GEO_OFF, f"{BB}.local_mp=gine", *PLAIN, *POOLED, *ONE, *SCRATCH, *NO_PHYSICS],
    "both": [*GEO_ON, f"{BB}.local_mp=gine", *PLAIN, *POOLED, *ONE, *SCRATCH, *NO_PHYSICS],
    "3d+charges": [*GEO_ON, f"{BB}.local_mp=none", *CHARGES, *POOLED, *ONE, *SCRATCH, *NO_PHYSICS],
    "3d+surface": [*GEO_ON, f"{BB}.local_mp=none", *SURFACE, *POOLED, *ONE, *SCRATCH, *NO_PHYSICS],
    "3d+confs": [*GEO_ON, f"{BB}.local_mp=none", *PLAIN, *POOLED, *TEN, *SCRATCH, *NO_PHYSICS],  # Uni-Mol's augmentation
    "3d+additive": [*GEO_ON, f"{BB}.local_mp=none", *PLAIN, *ADDITIVE, *ONE, *SCRATCH, *NO_PHYSICS],
    "3d+surface+additive": [*GEO_ON, f"{BB}.local_mp=none", *SURFACE, *ADDITIVE, *ONE, *SCRATCH, *NO_PHYSICS],
    "3d+surface+additive+trunk500k": [*GEO_ON, f"{BB}.local_mp=none", *SURFACE, *ADDITIVE, *ONE, *TRUNK, *NO_PHYSICS],
    "3d+surface+additive+physics": [*GEO_ON, f"{BB}.local_mp=none", *SURFACE, *ADDITIVE, *ONE, *SCRATCH, *PHYSICS],
}


@dataclass(frozen=True)
class MoleculeSet:
    config: str
    csv: str
    splits: tuple[int, ...]  # the data module's split_seed values
    val: str  # the monitored validation metric (the checkpoint's choice)
    lower_is_better: bool
    test: str  # the row's test metric


SETS: dict[str, MoleculeSet] = {
    "freesolv": MoleculeSet("configs/freesolv.yaml", "data/molecules/freesolv.csv", (0, 1, 2, 3, 4),
                            "val_rmse", True, "test_rmse"),
    # the published split is a column of the file: split_seed does not change it
    "solubility": MoleculeSet("configs/solubility.yaml", "data/molecules/solubility.csv", (0,),
                              "val_rmse", True, "test_rmse"),
    "b3db": MoleculeSet("configs/b3db.yaml", "data/molecules/b3db.csv", (0,), "val_acc", False, "test_auc"),
}
SEEDS = (0, 1, 2)
DRY_MOLECULES = 40
DRY_ARGS = ["--trainer.max_steps=2", "--trainer.max_epochs=1", "--trainer.log_every_n_steps=1"]


@dataclass(frozen=True)
class Run:
    set: str
    design: str
    split: int
    seed: int

    @property
    def key(self) -> tuple:
        return (self.set, self.design, self.split, self.seed)

    @property
    def name(self) -> str:
        return f"bench_designs_{self.set}_{self.design}_split{self.split}_seed{self.seed}"


def plan(sets: list[str], designs: list[str], splits: list[int] | None, seeds: list[int]) -> list[Run]:
    """Every (set, split, seed, design), designs of one split and seed next to each other."""
    return [Run(s, d, sp, seed) for s in sets for sp in SETS[s].splits if splits is None or sp in splits
            for seed in seeds for d in designs]


def fit_args(run: Run, csv: Path, extra: list[str]) -> list[str]:
    """The ``vecset fit`` arguments of one run (paths absolute: the run may start in another folder)."""
    ms = SETS[run.set]
    args = ["fit", "--config", str(ROOT / ms.config), "--trainer.enable_progress_bar=false",
            f"--seed_everything={run.seed}", f"{DATA}.csv_path={csv}", f"{DATA}.split.seed={run.split}",
            *DESIGNS[run.design], *extra]
    if ms.test != "test_auc":  # B3DB's ROC-AUC is in its report (test_binary.json): plots stay on there
        args.append("--plots=false")
    return args


def environment(run: Run) -> dict[str, str]:
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return os.environ | {"VECSET_RUN_NAME": run.name, "VECSET_RUN_VERSION": "0", "OMP_WAIT_POLICY": "PASSIVE",
                         "PYTHONPATH": path}


def run_dir(workdir: Path, run: Run) -> Path:
    return workdir / "runs" / run.name / "version_0"


def collect(run: Run, directory: Path) -> dict:
    """The row of a finished run: its validation metric (the best checkpoint's) and test metric."""
    ms = SETS[run.set]
    res = json.loads((directory / "results.json").read_text())
    if res["monitor"] != ms.val:
        raise SystemExit(f"{directory}: the checkpoint was chosen by {res['monitor']}, expected {ms.val}")
    if ms.test == "test_auc":
        binary = json.loads(next(directory.rglob("test_binary.json")).read_text())
        test = binary["roc_auc"]
    else:
        test = res["test"][ms.test]
    return {"set": run.set, "design": run.design, "split": run.split, "seed": run.seed, ms.val: res["best_val"],
            ms.test: test, "epochs": res["epochs"], "setup_seconds": res["setup_seconds"],
            "train_seconds": res["train_seconds"], "run_dir": str(directory)}


def fit_subprocess(run: Run, args: list[str], workdir: Path) -> None:
    """``vecset fit`` in a process of its own, its output in ``fit.log`` beside its run folder."""
    log = run_dir(workdir, run).parent / "fit.log"
    with open(log, "w") as out:
        cmd = ["nice", "-n", "5", str(Path(sys.executable).parent / "vecset"), *args]
        if subprocess.run(cmd, cwd=workdir, env=environment(run), stdout=out, stderr=subprocess.STDOUT).returncode:
            raise SystemExit(f"{run.name}: vecset fit failed, see {log}")


def fit_in_process(run: Run, args: list[str], workdir: Path) -> None:
    """The same ``vecset fit`` through ``run_cli`` in this process (the dry run: no interpreter and
    imports to start per run); the working folder and the run's environment are restored after."""
    from vecset.pipelines.cli import run_cli

    saved, cwd = {k: os.environ.get(k) for k in ("VECSET_RUN_NAME", "VECSET_RUN_VERSION")}, os.getcwd()
    os.environ.update({k: environment(run)[k] for k in saved})
    os.chdir(workdir)
    try:
        run_cli(args)
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def execute(run: Run, workdir: Path, csv: Path, extra: list[str], in_process: bool = False) -> dict:
    """``vecset fit`` of one run in ``workdir``, then its row. A run folder with a results.json
    is a finished run: read, not run again."""
    directory = run_dir(workdir, run)
    if not (directory / "results.json").is_file():
        shutil.rmtree(directory, ignore_errors=True)  # a run cut off before its end: start it again
        directory.parent.mkdir(parents=True, exist_ok=True)
        (fit_in_process if in_process else fit_subprocess)(run, fit_args(run, csv, extra), workdir)
    return collect(run, directory)


def choose(rows: list[dict]) -> dict:
    """Per set: each design's mean validation metric over its runs, and the best design by it."""
    out = {}
    for name in dict.fromkeys(r["set"] for r in rows):
        ms = SETS[name]
        means = {d: statistics.fmean(r[ms.val] for r in rows if r["set"] == name and r["design"] == d)
                 for d in dict.fromkeys(r["design"] for r in rows if r["set"] == name)}
        best = (min if ms.lower_is_better else max)(means, key=means.get)
        out[name] = {"design": best, "by": f"mean {ms.val}", "means": means}
    return out


def figure(rows: list[dict], path: Path) -> None:
    """Test metric per (split, seed), one marker per design, one panel per set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["set"] for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        metric = SETS[name].test
        mine = [r for r in rows if r["set"] == name]
        cells = list(dict.fromkeys((r["split"], r["seed"]) for r in mine))
        designs = list(dict.fromkeys(r["design"] for r in mine))
        for k, design in enumerate(designs):
            pts = [(cells.index((r["split"], r["seed"])), r[metric]) for r in mine if r["design"] == design]
            ax.scatter([x + 0.1 * (k - (len(designs) - 1) / 2) for x, _ in pts], [y for _, y in pts], label=design, s=18)
        ax.set_xticks(range(len(cells)), [f"{s}/{e}" for s, e in cells], fontsize=7)
        ax.set_xlabel("split / seed")
        ax.set_ylabel(metric)
        ax.set_title(name)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def dry_csv(workdir: Path) -> Path:
    """The first ``DRY_MOLECULES`` FreeSolv molecules."""
    path = workdir / "freesolv_dry.csv"
    lines = (ROOT / SETS["freesolv"].csv).read_text().splitlines(keepends=True)
    path.write_text("".join(lines[: DRY_MOLECULES + 1]))
    return path


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    ap.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=list(DESIGNS))
    ap.add_argument("--splits", type=int, nargs="+", default=None, help="only these split seeds (default: all of a set's)")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--extra", nargs="*", default=[], help="more vecset fit arguments for every run")
    ap.add_argument("--out", default=None, help="the JSON (default bench/results/molecule_designs.json); "
                                                "the figure goes beside it")
    ap.add_argument("--dry", action="store_true",
                    help=f"seconds: FreeSolv's first {DRY_MOLECULES} molecules, split 0, seed 0, 2 steps per "
                         "design, in this process, in a folder of its own (--out, default /tmp/molecule_designs_dry)")
    args = ap.parse_args(argv)
    if args.dry:
        out = Path(args.out or "/tmp/molecule_designs_dry/molecule_designs.json")
        workdir = out.parent
        workdir.mkdir(parents=True, exist_ok=True)
        runs = plan(["freesolv"], args.designs, [0], [0])
        csvs = {"freesolv": dry_csv(workdir)}
        extra = [*DRY_ARGS, f"{DATA}.cache_dir={workdir / 'cache'}", *args.extra]
    else:
        out = Path(args.out or ROOT / "bench" / "results" / "molecule_designs.json")
        workdir = ROOT
        runs = plan(args.sets, args.designs, args.splits, args.seeds)
        csvs = {name: ROOT / ms.csv for name, ms in SETS.items()}
        extra = args.extra
    out.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(out.read_text()) if out.is_file() else {}
    rows = [r for r in old.get("rows", [])]
    done = {(r["set"], r["design"], r["split"], r["seed"]) for r in rows}
    load = Path("/proc/loadavg").read_text().split()[:3]
    skipped = 0
    for run in runs:
        if run.key in done:
            skipped += 1
            continue
        t0 = time.time()
        row = execute(run, workdir, csvs[run.set], extra, in_process=args.dry)
        row["wall_seconds"] = round(time.time() - t0, 1)
        rows.append(row)
        ms = SETS[run.set]
        print(f"{run.set} {run.design} split {run.split} seed {run.seed}: {ms.val} {row[ms.val]:.4f} "
              f"{ms.test} {row[ms.test]:.4f}", flush=True)
        # after every run: a cut-off study keeps what it finished (and the file's other keys: notes, commands)
        out.write_text(json.dumps(old | {"command": "python bench/molecule_designs.py " + " ".join(sys.argv[1:]),
                                   "dry": args.dry, "designs": DESIGNS, "loadavg_at_start": load,
                                   "rows": rows, "chosen": choose(rows)}, indent=1))
    if skipped:
        print(f"{skipped} finished rows kept from {out}")
    if not rows:
        raise SystemExit("no rows: nothing was run")
    result = json.loads(out.read_text()) if out.is_file() else {}
    result |= {"rows": rows, "chosen": choose(rows), "loadavg_at_end": Path("/proc/loadavg").read_text().split()[:3]}
    out.write_text(json.dumps(result, indent=1))
    figure(rows, out.with_suffix(".png"))
    for name, c in result["chosen"].items():
        print(f"{name}: chosen {c['design']} by {c['by']} ({', '.join(f'{d} {v:.4f}' for d, v in c['means'].items())})")
    print(f"wrote {out} and {out.with_suffix('.png')}")
    return out


if __name__ == "__main__":
    main()
