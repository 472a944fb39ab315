"""Fashion-MNIST at equal wall time: named variants (CCT, today's patch self-attention, the CNN)
each trained for the same budget through ``vecset fit``, the rows appended to one JSON.

Issue 46: self-attention against the CNN in the backbone's slot at equal budget, the recipe
chosen on the validation split. Each variant is a config (``VARIANTS``; the same data module
and recipe unless ``--args`` changes it for all) run with ``trainer.max_time`` = ``--minutes``
and ``max_epochs`` sized to that budget on this machine (``image_baselines.budget_epochs``: a
measured step time; ``--epochs`` gives them instead, for all (``--epochs 10``: equal epochs) or
per variant (``--epochs cct=4 cnn=3``: the cosine of each ending nearest the budget). A row per run:
``model``, ``device``, ``minutes``, ``epochs``, ``params``, ``test_acc``, ``val_acc`` (the best
validation accuracy), ``command`` (the exact ``vecset fit`` line), the machine's load before and
after (``uptime``), the run directory and its validation curve; and a figure of validation
accuracy against minutes, every variant of the call in one plot.

``--subset N`` trains on a stratified N-image subset of the training split (validation as the
data module splits it: 6,000 images): for the search. Its rows carry no test accuracy (the test
split is not read into them while choosing). ``--dry``: a tiny subset and one epoch of 2 steps per variant,
run in this process, files under ``--out``'s folder: it checks the script in seconds.

    python bench/fashion_equal_time.py --minutes 5 --subset 10000          # the search, validation only
    python bench/fashion_equal_time.py --minutes 30                         # CCT, attention, CNN: 30 min each
    python bench/fashion_equal_time.py --minutes 30 --models cct cnn --args "--data.init_args.batch_size 256"
    python bench/fashion_equal_time.py --minutes 10 --device gpu --args "--data.init_args.batch_size 512"
                                    # --device gpu: the data and the crop/flip on the device (ON_DEVICE)
    python bench/fashion_equal_time.py --dry --out /tmp/fet/fashion_equal_time.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import RESULTS, machine, table  # noqa: E402

VARIANTS = {
    "cct": "configs/fashion_mnist.yaml",  # ConvTokenizer, sequence pooling, stochastic depth
    "attention": "configs/fashion_mnist_patches.yaml",  # conv stem + 4x4 patches, CLS pooling
    "cnn": "configs/fashion_mnist_cnn.yaml",  # GridResNet in the backbone's slot
}
# the same recipe with the data on the device: the crop and flip per image on whole batches there
# (batch_augment), no per-image CPU transforms; --device gpu uses it, --on-device on the CPU too
ON_DEVICE = ["--data.init_args.augment", "false", "--data.init_args.train_transforms", "null",
             "--data.init_args.placement.on_device", "true", "--data.init_args.batch_augment",
             json.dumps([{"class_path": "vecset.pipelines.data.batch_augment.RandomCrop", "init_args": {"padding": 2}},
                         {"class_path": "vecset.pipelines.data.batch_augment.HorizontalFlip"}])]
DRY = {"max_train": 64, "max_val": 32, "max_test": 32, "batch_size": 16}
COLS = ["tag", "model", "device", "minutes", "epochs", "params", "val_acc", "test_acc", "train_images"]


def uptime() -> str:
    """The machine's load averages (``uptime``'s line): who else shared it."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def device_name(device: str) -> str:
    if device == "gpu":
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "gpu (none found)"
    model = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                  if ln.startswith("model name")), None) if Path("/proc/cpuinfo").exists() else None
    return f"cpu: {model or platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def fit_args(root: str, minutes: float, epochs: int | None, subset: int | None, device: str, dry: bool,
             extra: list[str]) -> list[str]:
    """The ``vecset fit`` arguments shared by every variant of a call."""
    args = ["--data.init_args.root", root, "--trainer.enable_progress_bar", "false", "--trainer.accelerator", device]
    if dry:
        for k, v in DRY.items():
            args += [f"--data.init_args.{k}", str(v)]
        args += ["--trainer.limit_train_batches", "2", "--trainer.limit_val_batches", "1", "--trainer.limit_test_batches",
                 "1", "--trainer.max_epochs", "1", "--trainer.log_every_n_steps", "1", "--plots", "false"]
    else:
        secs = int(round(minutes * 60))
        args += ["--trainer.max_time", f"00:{secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}"]
        if epochs is not None:
            args += ["--trainer.max_epochs", str(epochs)]
        if subset is not None:  # the search: no test pass (the test split is not read), no report pictures
            args += ["--data.init_args.max_train", str(subset), "--trainer.limit_test_batches", "0", "--plots", "false"]
    return args + extra


def run(config: str, args: list[str], workdir: Path, in_process: bool) -> Path:
    """``vecset fit`` of ``config``: in a child process (timed runs: a fresh process each), or in
    this one (``--dry``); the run directory (under ``workdir``/runs) from its ``results: <path>`` line."""
    workdir.mkdir(parents=True, exist_ok=True)
    if in_process:
        from vecset.pipelines.cli import RUNS_DIR, config_name, run_cli

        with contextlib.chdir(workdir):
            run_cli(["fit", "--config", str(ROOT / config), *args])
        runs = workdir / RUNS_DIR / config_name(["--config", config])
        return max(runs.glob("version_*"), key=lambda p: int(p.name.split("_")[1]))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    out = subprocess.run([sys.executable, "-m", "vecset", "fit", "--config", str(ROOT / config), *args],
                         cwd=workdir, env=env, capture_output=True, text=True)
    if out.returncode:
        sys.stderr.write(out.stdout[-3000:] + out.stderr[-3000:])
        raise SystemExit(f"vecset fit --config {config} failed (exit {out.returncode})")
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("results: ")][-1]
    return workdir / Path(line.split("results: ", 1)[1]).parent


def row(model: str, config: str, args: list[str], run_dir: Path, device: str, minutes: float,
        subset: int | None, train_images: int, loads: tuple[str, str], tag: str | None = None) -> dict:
    from bench.image_baselines import trainable_parameters, val_curve

    res = json.loads((run_dir / "results.json").read_text())
    mins, acc = val_curve(run_dir)
    return {"model": model, "tag": tag or model, "config": config, "device": device_name(device), "minutes": minutes,
            # a run cut by max_time before its first validation has no best checkpoint, only a last one
            "epochs": res["epochs"], "steps": res["global_steps"], "params": trainable_parameters(res["checkpoint"] or res["last_checkpoint"]),
            # the search does not read the test split into its rows
            "test_acc": None if subset is not None else res["test"]["test_acc"],
            "val_acc": res["best_val"], "train_images": train_images,
            "wall_seconds": res["wall_seconds"], "precision": res.get("precision"),
            # the child inherits both: the threads torch starts with and the cores it may run on
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "cpus": sorted(os.sched_getaffinity(0)),
            "command": f"vecset fit --config {config} {shlex.join(args)}", "run": str(run_dir),
            "load_before": loads[0], "load_after": loads[1], "val_curve": {"minutes": mins, "val_acc": acc}}


def plot(rows: list[dict], out: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows:
        c = r["val_curve"]
        ax.plot(c["minutes"], c["val_acc"], marker="o", ms=3, label=f"{r.get('tag') or r['model']} ({r['params']:,} parameters)")
    ax.set_xlabel("minutes of training (validation included)")
    ax.set_ylabel("validation accuracy")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def same_budget(previous: list[dict], rows: list[dict]) -> list[dict]:
    """The runs one figure shows: the earlier rows of the JSON with this call's budget (device,
    minutes, training images), then this call's."""
    def key(r: dict) -> tuple:
        return r["device"], r["minutes"], r["train_images"]

    return [r for r in previous if key(r) == key(rows[0])] + rows


def parse_epochs(ap: argparse.ArgumentParser, given: list[str] | None) -> dict[str, int]:
    """``--epochs``: one N for every variant ("*") or MODEL=N items."""
    out: dict[str, int] = {}
    for item in given or []:
        model, _, n = item.rpartition("=")
        if model and model not in VARIANTS:
            ap.error(f"--epochs {item}: unknown variant {model!r}; expected one of {', '.join(VARIANTS)}")
        if not n.isdigit() or int(n) < 1:
            ap.error(f"--epochs {item}: expected a positive whole number of epochs (N or MODEL=N)")
        out[model or "*"] = int(n)
    return out


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(VARIANTS), choices=list(VARIANTS), help="variants to run")
    ap.add_argument("--minutes", type=float, default=30.0, help="wall-time budget of each run (trainer.max_time)")
    ap.add_argument("--epochs", nargs="+", default=None, metavar="N|MODEL=N",
                    help="max_epochs of every run (N) or per variant (cct=4 cnn=3; the others sized); "
                         "default: sized to the budget from a measured step time")
    ap.add_argument("--subset", type=int, default=None,
                    help="train on N images (stratified); rows then carry validation accuracy only")
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu", help="trainer.accelerator")
    ap.add_argument("--on-device", action="store_true",
                    help="the data and the crop/flip on the training device (batch_augment); the default with --device gpu")
    ap.add_argument("--tag", default=None, help="the rows' label (default: the model), e.g. 'cct +TrivialAugment'")
    ap.add_argument("--args", default="", help="more vecset fit arguments for every variant (one string)")
    ap.add_argument("--root", default="/usr/share/datasets/fashion-mnist", help="folder of the four idx files")
    ap.add_argument("--workdir", default=str(ROOT), help="where the runs/ folder goes")
    ap.add_argument("--dry", action="store_true", help="a tiny subset, 2 steps, in this process: checks the script")
    ap.add_argument("--out", default=None, help="JSON path (default bench/results/fashion_equal_time.json; "
                                                "--dry: bench/results/tmp/fashion_equal_time_dry.json)")
    a = ap.parse_args(argv)
    epochs_of = parse_epochs(ap, a.epochs)
    if a.subset is not None and a.subset < 10:
        ap.error(f"--subset must be at least 10 images (one per class), got {a.subset}")
    minutes = 0.0 if a.dry else a.minutes
    out = Path(a.out) if a.out else RESULTS / ("tmp/fashion_equal_time_dry.json" if a.dry else "fashion_equal_time.json")
    workdir = out.parent / "runs_dry" if a.dry and a.workdir == str(ROOT) else Path(a.workdir)
    on_device = a.on_device or a.device == "gpu"
    extra = (ON_DEVICE if on_device else []) + shlex.split(a.args)
    rows = []
    for model in a.models:
        config = VARIANTS[model]
        data = ["--data.init_args.root", a.root] + (["--data.init_args.max_train", str(a.subset)] if a.subset else [])
        epochs = epochs_of.get(model, epochs_of.get("*"))
        if epochs is None and not a.dry:
            from bench.image_baselines import budget_epochs

            epochs, sizing = budget_epochs(config, data + extra, a.minutes)
            print(f"{model}: {epochs} epoch(s) for {a.minutes:g} minutes {sizing}", flush=True)
        args = fit_args(a.root, minutes, epochs, a.subset, a.device, a.dry, extra)
        before = uptime()
        print(f"{model}: vecset fit --config {config} {shlex.join(args)}  [{before}]", flush=True)
        run_dir = run(config, args, workdir, in_process=a.dry)
        train_images = DRY["max_train"] if a.dry else a.subset or 54000
        rows.append(row(model, config, args, run_dir, a.device, minutes, a.subset, train_images, (before, uptime()), a.tag))
    print(table(rows, COLS))
    previous = json.loads(out.read_text())["rows"] if out.exists() and not a.dry else []
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = f"{out.stem}_{a.device}_{minutes:g}min" + (f"_subset{a.subset}" if a.subset else "")
    figure = plot(same_budget(previous, rows), out.with_name(stem + ".png"), f"Fashion-MNIST, {minutes:g} minutes each on {a.device}"
                  + (f", {a.subset:,} training images" if a.subset else ""))
    for r in rows:
        r["figure"] = figure.name
    payload = {"machine": machine(), "command": "python bench/fashion_equal_time.py " + shlex.join(argv or sys.argv[1:]),
               "split": "FashionMNISTDataModule: val 10% of the official training set (stratified, seed 0), the "
                        "official test set; --subset rows: validation only",
               "rows": previous + rows}
    out.write_text(json.dumps(payload, indent=2))
    print(f"wrote {out} and {figure}")
    return out


if __name__ == "__main__":
    main()
