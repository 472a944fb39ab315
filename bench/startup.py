"""How long the ``vecset`` command takes to answer when it does little (issue 60: help, a refused
setting and a one-molecule prediction should answer in about a second), and which imports
the time goes to: each command in a fresh process under ``python -X importtime``, its wall time
and the import time (self time of every module, summed per top-level package) it spent. Prints a table, writes
bench/results/startup.json.

    python bench/startup.py [--repeats 3] [--checkout DIR]

``--checkout`` times another checkout's code (e.g. main, for a before/after): the command runs
with PYTHONPATH set to it, from a temporary folder (so the shipped configs are found by name
where the checkout supports it; give a checkout without that --config configs/debug.yaml paths
through --absolute).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import RESULTS, machine  # noqa: E402

# what a user types that should answer at once; {configs} is the checkout's configs folder
COMMANDS = {
    "vecset --help": ["--help"],
    "refused setting": ["fit", "--config", "{configs}/debug.yaml", "--model.init_args.backbone.init_args.dpeth", "2"],
    "predict --model solubility --smiles CCO": ["predict", "--model", "solubility", "--smiles", "CCO"],
}
RUN = "import sys; from vecset.command import main; sys.argv[0] = 'vecset'; main()"
IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def run_once(checkout: Path, args: list[str], cwd: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", RUN, *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    top: dict[str, float] = {}  # top-level package -> the self time of its modules
    for line in r.stderr.splitlines():
        m = IMPORT_LINE.match(line)
        if m:
            name = m.group(4).split(".")[0]
            top[name] = top.get(name, 0.0) + int(m.group(1)) / 1e6
    return {"wall_s": wall, "rc": r.returncode, "imports_s": sum(top.values()), "top": top,
            "stdout_tail": r.stdout[-300:], "stderr_tail": "\n".join(
                ln for ln in r.stderr.splitlines() if not ln.startswith("import time:"))[-300:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--checkout", type=Path, default=ROOT)
    ap.add_argument("--label", default="this checkout")
    ap.add_argument("--out", type=Path, default=RESULTS / "startup.json")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as cwd:
        for name, cmd in COMMANDS.items():
            cmd = [a.replace("{configs}", str(args.checkout / "configs")) for a in cmd]
            runs = [run_once(args.checkout, cmd, cwd) for _ in range(args.repeats)]
            last = runs[-1]
            heavy = sorted(last["top"].items(), key=lambda kv: -kv[1])[:4]
            rows.append({"command": name, "args": cmd, "rc": last["rc"],
                         "wall_s_median": statistics.median(r["wall_s"] for r in runs),
                         "wall_s": [round(r["wall_s"], 3) for r in runs],
                         "imports_s_median": statistics.median(r["imports_s"] for r in runs),
                         "heaviest_imports_s": {k: round(v, 3) for k, v in heavy},
                         "lightning_imported": "pytorch_lightning" in last["top"],
                         "stderr_tail": last["stderr_tail"]})
    print(f"{args.label} ({args.checkout}), {args.repeats} runs each, one torch thread")
    print(f"{'command':<42} {'rc':>3} {'wall s':>7} {'imports s':>9}  heaviest imports (s)")
    for r in rows:
        heavy = ", ".join(f"{k} {v:.2f}" for k, v in r["heaviest_imports_s"].items())
        print(f"{r['command']:<42} {r['rc']:>3} {r['wall_s_median']:>7.2f} {r['imports_s_median']:>9.2f}  {heavy}")
    out = {"label": args.label, "checkout": str(args.checkout), "machine": machine(), "repeats": args.repeats,
           "command": " ".join(sys.argv), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
