"""Fashion-MNIST side by side (issue 61): the CCT and the CNN a user copies, started together on
the same machine, each on its own core with one thread, for the same wall-clock budget.

The models: ``cct`` (``vecset fit --config configs/fashion_mnist.yaml``, its cosine annealed over
the time budget: ``--model.init_args.schedule budget``, ``max_epochs 100`` so that time stops it),
``cnn`` (the PyTorch examples' MNIST network, ``bench/fashion_examples_cnn.py``) and, optionally,
``gridresnet`` (``configs/fashion_mnist_cnn.yaml``, a CNN in the backbone's slot). A job is one
model with one seed. Jobs run in waves of as many jobs as ``--cores`` names, each pinned to its
core (``taskset -c K``) with ``OMP_NUM_THREADS=1``; a wave ends before the next starts. Each job
writes into its own folder, ``<root_dir>/side_by_side/<model>_seed<S>/`` (its run, and its
output in ``log.txt``); a folder that already holds a finished run is refused unless
``--overwrite``. ``--vecset_args`` adds arguments to the vecset models' ``fit`` (a callback, a
setting), after the script's own.

``--out`` gets one row per job (steps/s, epochs, best validation and test accuracy, the flip
ones where the run has them, precision, parameters, command, start time, the load before and
after its wave), the machine, and a summary per model (mean and spread of the seeds); the two
tables are printed, and a figure of test accuracy per seed goes next to the JSON. The
2-seed comparison, on a 2-core machine with nothing else running (30 min per wave, 2 waves):

    python bench/fashion_side_by_side.py --models cct cnn --seeds 0 1 --minutes 30 --cores 0 1 \\
        --out bench/results/fashion_side_by_side.json
    python bench/fashion_side_by_side.py --dry --root DIR --root_dir /tmp/sbs --out /tmp/sbs/sbs.json
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import table  # noqa: E402

CONFIGS = {"cct": "configs/fashion_mnist.yaml", "gridresnet": "configs/fashion_mnist_cnn.yaml"}
MODELS = ["cct", "cnn", "gridresnet"]
CNN_JSON = "fashion_examples_cnn.json"
VECSET_DRY = ["--data.init_args.max_train", "64", "--data.init_args.max_val", "32", "--data.init_args.max_test", "32",
              "--data.init_args.batch_size", "16", "--trainer.limit_train_batches", "2", "--trainer.limit_val_batches", "1",
              "--trainer.limit_test_batches", "1", "--trainer.max_epochs", "1", "--plots", "false"]
ROW_COLS = ["model", "seed", "core", "steps", "steps_per_s", "epochs", "val_acc", "test_acc", "test_acc_flip",
            "precision", "params", "wall_s"]
SUMMARY_COLS = ["model", "n", "test_acc_mean", "test_acc_spread", "val_acc_mean", "val_acc_spread", "steps_per_s_mean"]


def job_dir(root_dir: Path, model: str, seed: int) -> Path:
    return root_dir / "side_by_side" / f"{model}_seed{seed}"


def finished(jobdir: Path) -> Path | None:
    """The finished result a job folder holds: the CNN's JSON or a vecset run's results.json."""
    if (jobdir / CNN_JSON).is_file():
        return jobdir / CNN_JSON
    return next(iter(sorted(jobdir.glob("runs/*/version_*/results.json"))), None)


def vecset_exe() -> list[str]:
    """The ``vecset`` script beside this interpreter ([project.scripts]), else ``python -m vecset``."""
    script = Path(sys.executable).with_name("vecset")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "vecset"]


def child_command(model: str, seed: int, minutes: float, jobdir: Path, dry: bool, data_root: str | None,
                  vecset_args: list[str] = ()) -> list[str]:
    """What a job runs (its working directory is ``jobdir``: a vecset run goes to jobdir/runs/);
    ``vecset_args`` go to the vecset models' fit only."""
    if model == "cnn":
        cmd = [sys.executable, str(ROOT / "bench" / "fashion_examples_cnn.py"), "--minutes", f"{minutes:g}",
               "--seed", str(seed), "--out", str(jobdir / CNN_JSON)]
        return cmd + (["--dry"] if dry else []) + (["--root", data_root] if data_root else [])
    secs = int(round(minutes * 60))
    cmd = [*vecset_exe(), "fit", "--config", str(ROOT / CONFIGS[model]), "--seed_everything", str(seed),
           "--trainer.max_epochs", "100", "--model.init_args.schedule", "budget",
           "--trainer.max_time", f"00:{secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}",
           "--trainer.enable_progress_bar", "false"]
    return cmd + (["--data.init_args.root", data_root] if data_root else []) + (VECSET_DRY if dry else []) + list(vecset_args)


def pinned(cmd: list[str], core: int) -> tuple[list[str], dict]:
    """``cmd`` pinned to ``core`` with one thread: the argv (``taskset -c core ...``) and its environment."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return ["taskset", "-c", str(core), *cmd], env


def machine_facts(cpuinfo: str | None = None) -> dict:
    """The CPU's name, and its family and model numbers from ``/proc/cpuinfo``: a VM may call two
    generations "AMD EPYC" (family 25 is Zen 3/4, 26 is Zen 5), and steps/s differ between them."""
    if cpuinfo is None:
        cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    fields: dict[str, str] = {}
    for ln in cpuinfo.splitlines():
        key, _, value = ln.partition(":")
        fields.setdefault(key.strip(), value.strip())  # the first processor's
    family, model = (int(fields[k]) if fields.get(k, "").isdigit() else None for k in ("cpu family", "model"))
    return {"cpu": fields.get("model name"), "cpu_family": family, "cpu_model": model,
            "cpu_count": os.cpu_count(), "torch": importlib.metadata.version("torch"), "python": sys.version.split()[0]}


def read_result(model: str, jobdir: Path) -> dict:
    """The job's numbers, from the CNN's JSON row or the vecset run's results.json."""
    if model == "cnn":
        r = json.loads((jobdir / CNN_JSON).read_text())["rows"][-1]
        return {"steps": r["steps"], "steps_per_s": r["steps_per_s"], "epochs": r["epochs_completed"],
                "val_acc": r["val_acc"], "test_acc": r["test_acc"], "val_acc_flip": r.get("val_acc_flip"),
                "test_acc_flip": r.get("test_acc_flip"), "precision": r.get("precision"), "params": r.get("params"),
                "val_curve": {"minutes": [c["minutes"] for c in r["val_curve"]],
                              "val_acc": [c["val_acc"] for c in r["val_curve"]]}}
    results = finished(jobdir)
    res = json.loads(results.read_text())
    out = {"steps": res["global_steps"], "steps_per_s": res["global_steps"] / max(res["train_seconds"] or res["wall_seconds"], 1e-9),
           "epochs": res["epochs"], "val_acc": res["best_val"], "test_acc": res["test"].get("test_acc"),
           "test_acc_flip": res["test"].get("test_acc_flip"), "precision": res.get("precision"), "params": None,
           "run": str(results.parent), "val_curve": None}
    try:  # parameters and the validation curve: extras, a row without them is still a row
        from bench.image_baselines import trainable_parameters, val_curve

        out["params"] = trainable_parameters(res["checkpoint"] or res["last_checkpoint"])
        mins, acc = val_curve(results.parent)
        out["val_curve"] = {"minutes": mins, "val_acc": acc}
    except (Exception, SystemExit) as e:
        print(f"{model}: no parameters or curve ({e})", file=sys.stderr)
    return out


def run_wave(wave: list[tuple[str, int, int]], args, root_dir: Path) -> tuple[list[dict], list[str]]:
    """Start every (model, seed, core) of ``wave`` together; wait for all. Rows, and failures."""
    load_before = os.getloadavg()
    procs = []
    for model, seed, core in wave:
        jobdir = job_dir(root_dir, model, seed)
        jobdir.mkdir(parents=True, exist_ok=True)
        argv, env = pinned(child_command(model, seed, args.minutes, jobdir, args.dry, args.root,
                                         shlex.split(args.vecset_args)), core)
        log = open(jobdir / "log.txt", "w")  # closed when the child ends
        start = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        print(f"[{start}] {model} seed {seed} on core {core}: {shlex.join(argv)}", flush=True)
        p = subprocess.Popen(argv, cwd=jobdir, env=env, stdout=log, stderr=subprocess.STDOUT)
        procs.append((model, seed, core, jobdir, argv, p, log, start, time.monotonic()))
    ends = {}
    while len(ends) < len(procs):  # each child's wall time as it ends
        for model, seed, *_rest, p, log, _start, t0 in procs:
            if (model, seed) not in ends and p.poll() is not None:
                ends[model, seed] = time.monotonic() - t0
                log.close()
        time.sleep(0.2)
    load_after = os.getloadavg()
    rows, failed = [], []
    for model, seed, core, jobdir, argv, p, _log, start, _t0 in procs:
        if p.returncode != 0:
            tail = "\n".join((jobdir / "log.txt").read_text(errors="replace").splitlines()[-20:])
            failed.append(f"job {model} seed {seed} (core {core}) failed with exit code {p.returncode}; "
                          f"the end of {jobdir / 'log.txt'}:\n{tail}")
            continue
        rows.append({"model": model, "seed": seed, "core": core, "command": f"OMP_NUM_THREADS=1 {shlex.join(argv)}",
                     "job_dir": str(jobdir), "start_utc": start, "wall_s": round(ends[model, seed], 1),
                     **read_result(model, jobdir), "load_before": load_before, "load_after": load_after})
    return rows, failed


def summarize(rows: list[dict]) -> list[dict]:
    out = []
    for model in dict.fromkeys(r["model"] for r in rows):
        rs = [r for r in rows if r["model"] == model]
        s = {"model": model, "n": len(rs), "seeds": [r["seed"] for r in rs]}
        for key in ("test_acc", "val_acc", "steps_per_s"):
            vals = [r[key] for r in rs if r.get(key) is not None]
            s[f"{key}_mean"] = sum(vals) / len(vals) if vals else None
            s[f"{key}_spread"] = max(vals) - min(vals) if vals else None
        out.append(s)
    return out


def plot(rows: list[dict], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    models = list(dict.fromkeys(r["model"] for r in rows))
    for i, model in enumerate(models):
        rs = [r for r in rows if r["model"] == model]
        left.scatter([i] * len(rs), [r["test_acc"] for r in rs], label=model)
        for r in rs:
            left.annotate(f"seed {r['seed']}", (i, r["test_acc"]), fontsize=7, xytext=(4, 0), textcoords="offset points")
            if r.get("val_curve"):
                right.plot(r["val_curve"]["minutes"], r["val_curve"]["val_acc"], marker="o", ms=2,
                           color=f"C{i}", label=f"{model} seed {r['seed']}")
    left.set_xticks(range(len(models)), models)
    left.set_ylabel("test accuracy")
    right.set_xlabel("minutes")
    right.set_ylabel("validation accuracy")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    right.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["cct", "cnn"], choices=MODELS)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    ap.add_argument("--minutes", type=float, default=30.0, help="the wall-clock budget of each job")
    ap.add_argument("--cores", nargs="+", type=int, default=[0, 1], help="one job per core in each wave")
    ap.add_argument("--root_dir", default=str(ROOT / "runs"), help="the jobs go to ROOT_DIR/side_by_side/")
    ap.add_argument("--root", default=None, help="the Fashion-MNIST idx files (default: the data module's)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "fashion_side_by_side.json"))
    ap.add_argument("--vecset_args", default="", help="more arguments for the vecset models' fit, as one string "
                    "(e.g. '--trainer.callbacks+=vecset.pipelines.training.averaging.EMAWeightAveraging')")
    ap.add_argument("--dry", action="store_true", help="tiny subsets, 2 steps, one epoch: checks the script")
    ap.add_argument("--overwrite", action="store_true", help="remove a job folder that holds a finished run")
    ap.add_argument("--plot", action=argparse.BooleanOptionalAction, default=None,
                    help="the figure next to the JSON (default: when matplotlib is installed)")
    a = ap.parse_args(argv)
    root_dir = Path(a.root_dir).resolve()
    a.root = str(Path(a.root).resolve()) if a.root else None
    jobs = list(dict.fromkeys((m, s) for s in a.seeds for m in a.models))  # a wave: each model, one seed
    for model, seed in jobs:  # before anything starts
        jobdir = job_dir(root_dir, model, seed)
        done = finished(jobdir)
        if done is not None and not a.overwrite:
            ap.error(f"{jobdir} already holds a finished run ({done.name}); --overwrite replaces it, "
                     "or give another --root_dir")
        if jobdir.exists():
            shutil.rmtree(jobdir)
    machine = machine_facts()
    print(f"machine: {machine['cpu']} (family {machine['cpu_family']}, model {machine['cpu_model']}), {machine['cpu_count']} CPUs, torch {machine['torch']}; "
          f"{len(jobs)} jobs in waves of {len(a.cores)} on cores {a.cores}", flush=True)
    rows, failed = [], []
    for i in range(0, len(jobs), len(a.cores)):
        wave = [(m, s, core) for (m, s), core in zip(jobs[i:i + len(a.cores)], a.cores, strict=False)]
        got, failed = run_wave(wave, a, root_dir)
        rows += got
        if failed:
            break
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine, "command": "python bench/fashion_side_by_side.py " + shlex.join(sys.argv[1:] if argv is None else argv),
               "minutes": a.minutes, "dry": a.dry, "rows": rows, "summary": summarize(rows)}
    out.write_text(json.dumps(payload, indent=2))
    print(table(rows, ROW_COLS) + "\n\n" + table(payload["summary"], SUMMARY_COLS) if rows else "no finished jobs")
    want_plot = a.plot if a.plot is not None else importlib.util.find_spec("matplotlib") is not None
    if want_plot and rows:
        figure = plot(rows, out.with_suffix(".png"), "Fashion-MNIST, " + ("dry run" if a.dry else f"{a.minutes:g} min each") + f", one thread each: {machine['cpu']}")
        print(f"wrote {figure}")
    print(f"wrote {out}")
    if failed:
        raise SystemExit("\n\n".join(failed))
    return out


if __name__ == "__main__":
    main()
