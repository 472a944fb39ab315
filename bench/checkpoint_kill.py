"""Kill a process while it keeps overwriting a checkpoint; count what is left at the path.

Compares Lightning 2.6's writer (``lightning_fabric.utilities.cloud_io._atomic_save``: an fsspec
transaction, i.e. ``tempfile.mkstemp()`` in the system temp dir, then ``shutil.move``) with
``vecset.pipelines.training.checkpoint.AtomicCheckpointIO`` (temp file beside the target, fsync, os.replace),
with the system temp dir on the same filesystem as the checkpoint and on another one
(/dev/shm, tmpfs: the usual cluster layout of local /tmp and shared run directories).

    python bench/checkpoint_kill.py [--trials 8]

Prints a table, writes bench/results/checkpoint_kill.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
WRITERS = {
    "lightning _atomic_save": "from lightning_fabric.utilities.cloud_io import _atomic_save as save",
    "AtomicCheckpointIO": "from vecset.pipelines.training.checkpoint import AtomicCheckpointIO\nsave = AtomicCheckpointIO().save_checkpoint",
}
LOOP = """
import sys, torch
{imp}
for i in range(10_000):
    save({{"i": i, "w": torch.full((8_000_000,), float(i))}}, sys.argv[1])  # 32 MB
    print(i, flush=True)
"""


def trial(writer: str, tmpdir: str, target: Path, rng: random.Random) -> str:
    env = dict(os.environ, TMPDIR=tmpdir, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    p = subprocess.Popen([sys.executable, "-c", LOOP.format(imp=WRITERS[writer]), str(target)], env=env,
                         stdout=subprocess.PIPE, text=True)
    p.stdout.readline()  # one complete checkpoint exists
    time.sleep(rng.uniform(0.05, 0.6))
    p.send_signal(signal.SIGKILL)
    p.wait()
    try:
        c = torch.load(target, map_location="cpu", weights_only=True)
        return "complete" if bool((c["w"] == c["i"]).all()) else "corrupt"
    except Exception:
        return "truncated"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=8)
    args = ap.parse_args()
    rng = random.Random(0)
    rows = []
    with tempfile.TemporaryDirectory(dir=ROOT / "bench" / "results") as work:
        same_fs = str(Path(work) / "tmp")
        os.makedirs(same_fs)
        temp_dirs = {"same filesystem": same_fs}
        if os.path.isdir("/dev/shm") and os.stat("/dev/shm").st_dev != os.stat(work).st_dev:
            temp_dirs["tmpfs (/dev/shm)"] = tempfile.mkdtemp(dir="/dev/shm")
        for writer in WRITERS:
            for where, tmpdir in temp_dirs.items():
                target = Path(work) / "last.ckpt"
                outcomes = [trial(writer, tmpdir, target, rng) for _ in range(args.trials)]
                target.unlink(missing_ok=True)
                # partial files fsspec's mkstemp left behind (torch also puts a cache dir there)
                leaked = [f for f in os.listdir(tmpdir) if os.path.isfile(os.path.join(tmpdir, f))]
                for f in leaked:
                    os.remove(os.path.join(tmpdir, f))
                rows.append({"writer": writer, "system temp dir": where, "kills": args.trials,
                             "complete": outcomes.count("complete"),
                             "truncated or corrupt": args.trials - outcomes.count("complete"),
                             "temp files left": len(leaked)})
        for tmpdir in temp_dirs.values():
            if tmpdir.startswith("/dev/shm"):
                shutil.rmtree(tmpdir)
    cols = list(rows[0])
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r[c]) for c in cols))
    out = ROOT / "bench" / "results" / "checkpoint_kill.json"
    out.write_text(json.dumps(rows, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
