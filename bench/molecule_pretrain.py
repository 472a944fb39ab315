"""Fine-tuning from the pretrained molecule checkpoint against no pretraining (issue #31): the
same config, seed and split, two runs side by side (so they share the machine's load), the
checkpoint of each chosen by its validation metric only; prints a table and writes
bench/results/molecule_pretrain_<set>.json.

    python bench/molecule_pretrain.py --set freesolv --splits 0
    python bench/molecule_pretrain.py --set solubility
    python bench/molecule_pretrain.py --set b3db
    python bench/molecule_pretrain.py --set freesolv --inits pretrained --tag lr3e-4 --extra=--model.init_args.lr=0.0003
    python bench/molecule_pretrain.py --set freesolv --inits pretrained --ckpt <other>.ckpt --tag <its name>
    python bench/molecule_pretrain.py --set freesolv --splits 0 1 2 3 4 --seed 1 --tag seed1

``--ckpt``: the checkpoint the pretrained runs start from (default ``CKPT``, the shipped one);
it is written into the JSON. The runs import this checkout's ``vecset`` (its root goes first on
``PYTHONPATH``), not that of another checkout whose editable install the ``vecset`` command is.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CKPT = "data/molecules/pretrained_moses_10k.ckpt"
CONFIGS = {"freesolv": "configs/freesolv.yaml", "solubility": "configs/solubility.yaml", "b3db": "configs/b3db.yaml"}
METRIC = {"freesolv": "test_rmse", "solubility": "test_rmse", "b3db": "roc_auc"}


def command(name: str, config: str, split: int, init: str, extra: list[str], tag: str = "",
            ckpt: str = CKPT) -> tuple[list[str], dict[str, str], str]:
    """The fit's arguments, environment and run name (``launch`` starts it)."""
    run = f"bench_pretrain_{name}_s{split}_{init}{'_' + tag if tag else ''}"
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = os.environ | {"VECSET_RUN_NAME": run, "VECSET_RUN_VERSION": "0", "OMP_WAIT_POLICY": "PASSIVE",
                        "PYTHONPATH": path}
    args = [str(Path(sys.executable).parent / "vecset"), "fit", "--config", config, "--trainer.enable_progress_bar=false",
            "--data.init_args.split.seed", str(split), *extra]
    if name != "b3db":  # B3DB's ROC-AUC is in its report (test_binary.json): plots stay on there
        args.append("--plots=false")
    if init == "pretrained":
        args += ["--model.init_args.init_from", ckpt, "--model.init_args.init_parts", "[encoder, backbone]"]
    else:  # from scratch, also where the config starts from a trunk (configs/solubility.yaml)
        args += ["--model.init_args.init_from", "null"]
    return args, env, run


def launch(name: str, config: str, split: int, init: str, extra: list[str], tag: str = "",
           ckpt: str = CKPT, nice: int = 5) -> tuple[subprocess.Popen, Path]:
    args, env, run = command(name, config, split, init, extra, tag, ckpt)
    log = open(ROOT / "runs" / f"{run}.log", "w")
    return subprocess.Popen(["nice", "-n", str(nice), *args], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT), \
        ROOT / "runs" / run / "version_0"


def collect(name: str, run: Path) -> dict:
    res = json.loads((run / "results.json").read_text())
    out = {"run_dir": str(run.relative_to(ROOT)), "best_val": res["best_val"], "monitor": res["monitor"],
           "epochs": res["epochs"], "train_seconds": res["train_seconds"], "test": res["test"]}
    if name == "b3db":
        binary = next(run.rglob("test_binary.json"), None)
        if binary is not None:
            b = json.loads(binary.read_text())
            out["roc_auc"], out["pr_auc"] = b.get("roc_auc"), b.get("pr_auc")
    return out


def score(run: dict, metric: str) -> float:
    return run[metric] if metric == "roc_auc" else run["test"][metric]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", required=True, choices=sorted(CONFIGS))
    ap.add_argument("--splits", type=int, nargs="+", default=[0])
    ap.add_argument("--inits", nargs="+", default=["none", "pretrained"], choices=["none", "pretrained"],
                    help="the runs per split (side by side)")
    ap.add_argument("--tag", default="", help="appended to the run names (a variant beside the earlier runs)")
    ap.add_argument("--extra", nargs="*", default=[], help="more CLI arguments for every run")
    ap.add_argument("--ckpt", default=CKPT, help="the pretrained runs' init_from (relative to the repository root)")
    ap.add_argument("--seed", type=int, default=None, help="every run's seed_everything (default: the config's)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--nice", type=int, default=5, help="the runs' niceness (0: as the other work on the machine)")
    args = ap.parse_args(argv)
    if args.seed is not None:
        args.extra = [*args.extra, f"--seed_everything={args.seed}"]
    if "pretrained" in args.inits and not (ROOT / args.ckpt).is_file():
        raise SystemExit(f"--ckpt {args.ckpt}: no such file (relative to {ROOT})")
    (ROOT / "runs").mkdir(exist_ok=True)
    load = Path("/proc/loadavg").read_text().split()[:3]
    rows = []
    for split in args.splits:
        t0 = time.time()
        procs = {init: launch(args.set, CONFIGS[args.set], split, init, args.extra, args.tag, args.ckpt, args.nice)
                 for init in args.inits}
        for init, (p, _) in procs.items():
            if p.wait():
                raise SystemExit(f"{args.set} split {split} {init}: exit {p.returncode}, see runs/*.log")
        row = {"split": split, "wall_seconds": round(time.time() - t0, 1)}
        row |= {init: collect(args.set, run) for init, (_, run) in procs.items()}
        rows.append(row)
        m = METRIC[args.set]
        print(f"{args.set} split {split} {m}: " + "  ".join(
            f"{init} {score(row[init], m):.4f} (val {row[init]['best_val']:.4f})" for init in args.inits), flush=True)
    out = Path(args.out or ROOT / "bench" / "results" / f"molecule_pretrain_{args.set}.json")
    out.write_text(json.dumps({"command": "python bench/molecule_pretrain.py " + " ".join(sys.argv[1:]),
                               "checkpoint": args.ckpt, "config": CONFIGS[args.set], "metric": METRIC[args.set], "seed": args.seed,
                               "loadavg_at_start": load, "loadavg_at_end": Path("/proc/loadavg").read_text().split()[:3],
                               "splits": rows, "notes": ""}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
