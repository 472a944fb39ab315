"""Batch size as a budget choice: one job trained at several batch sizes with the learning rate
scaled to each, for an equal budget, the batch size chosen on the validation metric only.

Issue 44. Each batch size is a ``vecset fit`` of the job's config (a fresh child process each)
with ``--data.init_args.batch_size B`` and the model's ``lr_reference_batch`` = the config's own
batch size (``--reference``), so the config's ``lr`` is the rate at that batch and every run
trains at it scaled by ``--rule`` (``sqrt``, the default, for AdamW: Malladi et al. 2022;
``linear``: Goyal et al. 2017; ``pipelines/training/lr_scaling.py``). Warmup, a fraction of the
optimizer steps in the shipped configs, follows the steps of each batch size.

The budget is the same for every batch size: ``--epochs N`` (the same passes over the data:
fewer, larger steps) or ``--minutes M`` (``trainer.max_time``; the schedule then spans
``--epochs`` or the config's ``max_epochs`` and is cut where the time runs out). The chosen batch
size is the one with the best validation metric (the config's checkpoint monitor, in its mode);
each row carries its test metrics too, which play no part in the choice.

A row per batch size: ``batch_size``, ``lr`` (what the optimizer started from), ``epochs``,
``steps``, ``train_seconds`` (fit, validation passes included), ``items_per_s`` (the items the
training steps held, over ``train_seconds``), ``val_<metric>`` (the best), ``test_*``, the ``command``, the machine's
load before and after. Prints a table and writes ``bench/results/batch_size_<job>.json``
(``rows``, ``chosen``). Meant for a GPU, where the batch size is the main lever on speed.

    python bench/batch_size.py --config configs/fashion_mnist.yaml --minutes 3 --device gpu
    python bench/batch_size.py --config configs/digits.yaml --epochs 40 --batch-sizes 64 128 256 512
    python bench/batch_size.py --config configs/digits.yaml --dry --out /tmp/bs/batch_size.json   # seconds
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import RESULTS, machine, table  # noqa: E402
from bench.fashion_equal_time import device_name, run, uptime  # noqa: E402
from vecset.pipelines.training.lr_scaling import RULES, scaled_lr  # noqa: E402

DRY = ["--trainer.limit_train_batches", "2", "--trainer.limit_val_batches", "1", "--trainer.limit_test_batches", "1",
       "--trainer.max_epochs", "1", "--trainer.log_every_n_steps", "1", "--plots", "false"]


def config_values(config: str) -> tuple[int | None, float]:
    """The config's own batch size (None: it gives none) and its ``lr``."""
    import yaml

    cfg = yaml.safe_load((ROOT / config).read_text())
    batch = ((cfg.get("data") or {}).get("init_args") or {}).get("batch_size")
    lr = ((cfg.get("model") or {}).get("init_args") or {}).get("lr", 1e-3)  # TaskModule's default
    return batch, float(lr)


def train_items(config: str, extra: list[str]) -> int:
    """The training items of one epoch of ``config`` (with ``extra``): its data module set up
    for fit and its training loader's batches counted, in a scratch directory."""
    from vecset.pipelines.cli import run_cli

    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        cli = run_cli(["--config", str(ROOT / config), *extra], run=False)
        dm = cli.datamodule
        dm.prepare_data()
        dm.setup("fit")
        return sum(len(batch["ids"]) for batch in dm.train_dataloader())


def fit_args(batch: int, reference: int, rule: str, epochs: int | None, minutes: float | None, device: str,
             dry: bool, extra: list[str]) -> list[str]:
    """The ``vecset fit`` arguments of one batch size."""
    args = ["--data.init_args.batch_size", str(batch), "--model.init_args.lr_reference_batch", str(reference),
            "--model.init_args.lr_scaling", rule, "--trainer.accelerator", device, "--trainer.enable_progress_bar",
            "false"]
    if dry:
        return args + DRY + extra
    if epochs is not None:
        args += ["--trainer.max_epochs", str(epochs)]
    if minutes is not None:
        secs = int(round(minutes * 60))
        args += ["--trainer.max_time", f"00:{secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}"]
    return args + extra


def trained_items(steps: int, batch: int, n_train: int) -> int:
    """The items ``steps`` training batches of ``batch`` held: whole epochs of ``n_train`` items
    (the last batch of each short), then full batches (one optimizer step per batch)."""
    per_epoch = math.ceil(n_train / batch)
    epochs = steps // per_epoch
    return epochs * n_train + (steps - epochs * per_epoch) * batch


def monitor_mode(checkpoint: str) -> str:
    """``max`` or ``min``: the mode of the run's ModelCheckpoint (its state's key in ``checkpoint``)."""
    import torch

    ckpt = torch.load(checkpoint, map_location="cpu", weights_only=True)
    key = next(k for k in ckpt["callbacks"] if k.startswith("ModelCheckpoint{") and "'monitor': None" not in k)
    return "min" if "'mode': 'min'" in key else "max"


def run_lr(run_dir: Path, batch: int) -> float:
    """The rate the run's optimizer started from: its saved config's ``lr`` scaled to ``batch`` by
    its own ``lr_reference_batch`` and ``lr_scaling`` (what ``configure_optimizers`` did, for one
    process without gradient accumulation)."""
    import yaml

    init = yaml.safe_load((run_dir / "config.yaml").read_text())["model"]["init_args"]
    if init.get("lr_reference_batch") is None:
        return float(init["lr"])
    return scaled_lr(float(init["lr"]), batch, int(init["lr_reference_batch"]), init["lr_scaling"])


def row(batch: int, args: list[str], config: str, run_dir: Path, n_train: int, device: str,
        loads: tuple[str, str]) -> dict:
    res = json.loads((run_dir / "results.json").read_text())
    monitor = res["monitor"]
    return {"batch_size": batch, "lr": run_lr(run_dir, batch), "epochs": res["epochs"], "steps": res["global_steps"],
            "train_seconds": res["train_seconds"],
            "items_per_s": round(trained_items(res["global_steps"], batch, n_train) / res["train_seconds"], 1)
            if res["train_seconds"] else None,
            monitor: res["best_val"], "monitor": monitor, "mode": monitor_mode(res["checkpoint"] or res["last_checkpoint"]),
            **{k: v for k, v in res["test"].items() if k.startswith("test_")},
            "device": device_name(device), "precision": res.get("precision"),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "cpus": sorted(os.sched_getaffinity(0)),
            "command": f"vecset fit --config {config} {shlex.join(args)}", "run": str(run_dir),
            "load_before": loads[0], "load_after": loads[1]}


def choose(rows: list[dict]) -> dict:
    """The row with the best validation metric (ties: the first, the smaller batch)."""
    scored = [r for r in rows if r[r["monitor"]] is not None]
    if not scored:
        raise SystemExit("no run has a validation metric to choose by (did every run validate?)")
    sign = -1 if scored[0]["mode"] == "min" else 1
    best = max(scored, key=lambda r: (sign * r[r["monitor"]], -r["batch_size"]))
    return {"batch_size": best["batch_size"], "lr": best["lr"], "by": f"{best['monitor']} ({best['mode']})",
            best["monitor"]: best[best["monitor"]], **{k: v for k, v in best.items() if k.startswith("test_")}}


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="the job's config, e.g. configs/digits.yaml")
    ap.add_argument("--batch-sizes", nargs="+", type=int, default=[128, 256, 512, 1024])
    ap.add_argument("--reference", type=int, default=None,
                    help="the batch size the config's lr is meant for (default: the config's data batch_size)")
    ap.add_argument("--rule", choices=sorted(RULES), default="sqrt", help="model.init_args.lr_scaling")
    ap.add_argument("--epochs", type=int, default=None, help="max_epochs of every run (the budget in epochs)")
    ap.add_argument("--minutes", type=float, default=None, help="trainer.max_time of every run (the budget in time)")
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu", help="trainer.accelerator")
    ap.add_argument("--args", default="", help="more vecset fit arguments for every run (one string)")
    ap.add_argument("--workdir", default=str(ROOT), help="where the runs/ folder goes")
    ap.add_argument("--notes", default="", help="a line for the JSON (e.g. what else ran on the machine)")
    ap.add_argument("--dry", action="store_true", help="2 steps per batch size, in this process: checks the script")
    ap.add_argument("--out", default=None, help="JSON path (default bench/results/batch_size_<job>.json; "
                                                "--dry: bench/results/tmp/batch_size_<job>_dry.json)")
    a = ap.parse_args(argv)
    job = Path(a.config).stem
    config_batch, lr = config_values(a.config)
    reference = a.reference or config_batch
    if reference is None:
        ap.error(f"--reference: {a.config} gives no data.init_args.batch_size; give the batch size its lr is meant for")
    if not a.dry and a.epochs is None and a.minutes is None:
        ap.error("give the budget: --epochs N (equal epochs) or --minutes M (equal wall time), or both")
    if any(b < 1 for b in a.batch_sizes) or (a.epochs is not None and a.epochs < 1):
        ap.error("--batch-sizes and --epochs take positive whole numbers")
    out = Path(a.out) if a.out else RESULTS / (f"tmp/batch_size_{job}_dry.json" if a.dry else f"batch_size_{job}.json")
    workdir = out.parent / "runs_dry" if a.dry and a.workdir == str(ROOT) else Path(a.workdir)
    extra = shlex.split(a.args)
    n_train = train_items(a.config, extra)
    rows = []
    for batch in a.batch_sizes:
        args = fit_args(batch, reference, a.rule, a.epochs, a.minutes, a.device, a.dry, extra)
        before = uptime()
        print(f"batch {batch}: vecset fit --config {a.config} {shlex.join(args)}  [{before}]", flush=True)
        run_dir = run(a.config, args, workdir, in_process=a.dry)
        rows.append(row(batch, args, a.config, run_dir, n_train, a.device, (before, uptime())))
    monitor = rows[0]["monitor"]
    tests = sorted({k for r in rows for k in r if k.startswith("test_") and not k.endswith("_loss")})
    print(table(rows, ["batch_size", "lr", "epochs", "steps", "train_seconds", "items_per_s", monitor, *tests]))
    chosen = choose(rows)
    print(f"chosen on {chosen['by']}: batch {chosen['batch_size']} (lr {chosen['lr']:.4g})")
    payload = {"machine": machine(), "command": "python bench/batch_size.py " + shlex.join(argv or sys.argv[1:]),
               "config": a.config, "job": job, "reference_batch": reference, "config_lr": lr, "rule": a.rule,
               "budget": {"epochs": a.epochs, "minutes": a.minutes}, "train_items": n_train,
               "notes": a.notes, "rows": rows, "chosen": chosen}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2))
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main()
