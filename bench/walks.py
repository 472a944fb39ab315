"""How far one item travels through the house: folder switches on the way from a file to its test report.

For each modality, ``vecset test`` runs on a split of one item (one utterance; one molecule per
split; one image per class and split) with the reports on, inside this process, and every call
into the project's own code is recorded by the folder its function lives in (``pipelines/data``,
``encoders/speech``, ``heads``, ...; Lightning, torch and the tests are not the project's). The
trace is collapsed where consecutive calls stay in one folder; what is left is the walk:

- ``switches``: moves from one folder to another;
- ``pipelines_encoders``: moves between ``pipelines/*`` and ``encoders/*`` (either way);
- ``folders``: the distinct folders entered.

A checkpoint is made first by a one-step ``vecset fit`` (not traced). Run on the code of a commit
to compare two layouts by the same measure::

    python bench/walks.py                 # table, bench/results/walks.json
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import machine, table  # noqa: E402

PROJECT_DIRS = ("pipelines", "encoders", "heads", "backbone", "contracts", "vecset")


def folder_of(filename: str) -> str | None:
    """The project folder a function's file lies in (``pipelines/data``), or None outside the project."""
    try:
        rel = Path(os.path.realpath(filename)).relative_to(ROOT)
    except ValueError:
        return None
    if not rel.parts or rel.parts[0] not in PROJECT_DIRS:
        return None
    return str(rel.parent)


def trace(fn) -> list[str]:
    """The folders of the project's function calls while ``fn()`` runs, in order."""
    events: list[str] = []
    cache: dict[str, str | None] = {}

    def profile(frame, event, arg):
        if event == "call":
            name = frame.f_code.co_filename
            if name not in cache:
                cache[name] = folder_of(name)
            if cache[name] is not None:
                events.append(cache[name])

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return events


def walk(events: list[str]) -> dict:
    collapsed = [f for i, f in enumerate(events) if i == 0 or f != events[i - 1]]
    pe = sum(1 for a, b in zip(collapsed, collapsed[1:], strict=False)
             if {a.split("/")[0], b.split("/")[0]} == {"pipelines", "encoders"})
    # the same walk with backbone/attention counted as backbone (the folder the attention package was
    # split into on 2026-12-02) and vecset/__init__'s lazy name lookups left out: comparable with
    # bench/results/walks_before_house.json, measured before the split
    same = [("backbone" if f.startswith("backbone") else f) for f in collapsed if f != "vecset"]
    same = [f for i, f in enumerate(same) if i == 0 or f != same[i - 1]]
    return {"calls": len(events), "switches": max(0, len(collapsed) - 1), "pipelines_encoders": pe,
            "switches_as_before": max(0, len(same) - 1),
            "data_encoders": sum(1 for a, b in zip(same, same[1:], strict=False)
                                 if "pipelines/data" in (a, b) and (a + b).count("encoders")),
            "folders": sorted(set(collapsed)), "path": collapsed}


def vecset(args: list[str], cwd: Path) -> None:
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    out = subprocess.run([sys.executable, "-m", "vecset", *args], cwd=cwd, env=env,
                         capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"vecset {' '.join(args)} failed:\n{out.stderr[-3000:]}")


def speech_job(tmp: Path) -> list[str]:
    root = ROOT / "data" / "speech"
    utt = (root / "test.lst").read_text().split()[0]
    (tmp / "one.lst").write_text(utt + "\n")
    return ["--config", str(ROOT / "configs/speech_frames_debug.yaml"), "--data.init_args.root", str(root),
            "--data.init_args.splits.test", str(tmp / "one.lst")]  # the config's reports draw 1 utterance


def molecule_job(tmp: Path) -> list[str]:
    rows = list(csv.DictReader(open(ROOT / "data/molecules/freesolv.csv")))[:3]
    with open(tmp / "three.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["smiles", "expt", "split"])
        w.writeheader()
        for r, split in zip(rows, ("train", "val", "test"), strict=True):
            w.writerow({"smiles": r["smiles"], "expt": r["expt"], "split": split})
    return ["--config", str(ROOT / "configs/freesolv.yaml"), "--data.init_args.csv_path", str(tmp / "three.csv"),
            "--data.init_args.split.method", "column", "--data.init_args.batch_size", "1"]


def image_job(tmp: Path) -> list[str]:
    from PIL import Image

    for split in ("train", "val", "test"):
        for k, cls in enumerate(("a", "b")):
            (tmp / "images" / split / cls).mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (32, 32), (40 + 100 * k, 80, 120)).save(tmp / "images" / split / cls / "x.png")
    return ["--config", str(ROOT / "configs/image_folder.yaml"), "--data.init_args.root", str(tmp / "images"),
            "--model.init_args.head.init_args.num_outputs", "2", "--data.init_args.batch_size", "2"]


JOBS = {"speech": speech_job, "molecule": molecule_job, "image": image_job}


def measure(name: str) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"walk_{name}_"))
    try:
        args = JOBS[name](tmp)
        small = ["--trainer.logger", "false", "--trainer.enable_progress_bar", "false"]
        vecset(["fit", *args, "--trainer.max_steps", "1", "--trainer.max_epochs", "1", "--plots", "false",
                "--trainer.limit_val_batches", "1"], tmp)
        ckpt = next((tmp / "runs").rglob("last.ckpt"))
        from vecset.pipelines.cli import run_cli

        with contextlib.chdir(tmp), contextlib.redirect_stdout(open(os.devnull, "w")):
            events = trace(lambda: run_cli(["test", *args, *small, "--ckpt_path", str(ckpt)]))
        return {"job": name, **walk(events)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", nargs="+", choices=list(JOBS), default=list(JOBS))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "walks.json")
    args = ap.parse_args()
    rows = [measure(j) for j in args.jobs]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    cols = ["job", "calls", "switches", "pipelines_encoders", "switches_as_before", "data_encoders"]
    print(table([{k: r[k] for k in cols} | {"folders": len(r["folders"])} for r in rows], [*cols, "folders"]))
    args.out.write_text(json.dumps({"machine": machine(), "commit": commit, "command": "python bench/walks.py",
                                    "rows": rows}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
