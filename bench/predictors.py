"""How long ``vecset predict --model X`` takes, from the command line, for 10 inputs per shipped
predictor (issue 48's target: under 5 s on this CPU): the whole command in a fresh process
(Python start, imports, loading the model, featurizing, predicting, writing the CSV), and
inside it the import, load and predict parts. Prints a table, writes bench/results/predictors.json.

    python bench/predictors.py [--models freesolv g2p] [--repeats 3]
    python bench/predictors.py --dry   # one predictor, one repeat, 2 inputs: a check of the script
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import RESULTS, machine  # noqa: E402
from vecset.pipelines.pretrained import available, predictor_class, shipped  # noqa: E402

# 10 inputs per input option: ordinary ones, as a user would send them
INPUTS = {
    "--smiles": ["CCO", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O", "CCN(CC)CC", "c1ccc2ccccc2c1", "CC(C)O",
                 "ClCCl", "CC(=O)N", "OC1CCCCC1", "Cc1ccccc1"],
    "--words": ["hello", "world", "pronunciation", "attention", "molecule", "vector", "graph", "speech",
            "transformer", "lightning"],
}

# the parts, timed inside the command's process (python -X importtime would time imports alone)
PARTS = """
import sys, time, json
t0 = time.perf_counter()
from vecset.pipelines.pretrained import pretrained
t1 = time.perf_counter()
p = pretrained(sys.argv[1])
t2 = time.perf_counter()
rows = p.predict(json.load(open(sys.argv[2])))
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "predict_s": t3 - t2, "errors": sum(bool(r["error"]) for r in rows),
                  "modules": len(sys.modules), "lightning": "pytorch_lightning" in sys.modules}))
"""


def digit_files(folder: Path, n: int) -> list[str]:
    """``n`` of load_digits' test images as 8x8 PNG files (0..16 scaled to 0..255)."""
    import numpy as np
    from PIL import Image
    from sklearn.datasets import load_digits

    X = load_digits().data
    paths = []
    for i in range(n):
        path = folder / f"digit{i}.png"
        Image.fromarray((X[i].reshape(8, 8) * 255 / 16).astype(np.uint8)).save(path)
        paths.append(str(path))
    return paths


def fashion_files(folder: Path, n: int) -> list[str]:
    """``n`` of the shipped Fashion-MNIST test images (data/fashion_mnist/) as 28x28 PNG files."""
    import numpy as np
    from PIL import Image

    images = np.load(ROOT / "data" / "fashion_mnist" / "t10k_first500.npz")["images"]
    paths = []
    for i in range(n):
        path = folder / f"fashion{i}.png"
        Image.fromarray(images[i]).save(path)
        paths.append(str(path))
    return paths


def command(name: str, inputs: list[str]) -> list[str]:
    return [sys.executable, "-c", "import sys; from vecset.command import main; sys.argv[0] = 'vecset'; main()",
            "predict", "--model", name, predictor_class(name).input_flag, *inputs]


def child_cpu() -> float:
    """User + system CPU seconds of the finished child processes so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def bench(name: str, inputs: list[str], repeats: int, env: dict, parts_too: bool = True) -> dict:
    # cpu: the command's own CPU time, which other processes on a shared machine lengthen far
    # less than its wall time (on an idle machine the two are about equal: one thread works)
    walls, cpus = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), child_cpu()
        out = subprocess.run(command(name, inputs), env=env, capture_output=True, text=True, cwd=ROOT)
        walls.append(time.perf_counter() - t0)
        cpus.append(child_cpu() - c0)
        if out.returncode:
            return {"model": name, "error": (out.stderr or out.stdout).strip().splitlines()[-1]}
    rows = out.stdout.strip().splitlines()[1:]
    if not parts_too:
        return {"model": name, "inputs": len(inputs), "rows": len(rows), "wall_s_median": statistics.median(walls),
                "wall_s": walls, "cpu_s_median": statistics.median(cpus), "cpu_s": cpus,
                "under_5s": statistics.median(walls) < 5.0}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(inputs, f)
    parts = subprocess.run([sys.executable, "-c", PARTS, name, f.name], env=env,
                           capture_output=True, text=True, cwd=ROOT)
    os.unlink(f.name)
    split = json.loads(parts.stdout.strip().splitlines()[-1]) if parts.returncode == 0 else {}
    return {"model": name, "inputs": len(inputs), "rows": len(rows), "wall_s_median": statistics.median(walls),
            "wall_s": walls, "cpu_s_median": statistics.median(cpus), "cpu_s": cpus, **{k: round(v, 3) if isinstance(v, float) else v for k, v in split.items()},
            "under_5s": statistics.median(walls) < 5.0}


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", help=f"default: every shipped one ({', '.join(shipped())})")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dry", action="store_true", help="freesolv, 2 inputs, one repeat, the command only")
    ap.add_argument("--out", type=Path, default=RESULTS / "predictors.json")
    args = ap.parse_args(argv)
    names = ["freesolv"] if args.dry else (args.models or [n for n, ok in available().items() if ok])
    repeats = 1 if args.dry else args.repeats
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("OMP_NUM_THREADS", "2")
    rows = []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        images = {"digits": digit_files(Path(tmp), 10), "fashion_mnist": fashion_files(Path(tmp), 10)}
        for name in names:
            inputs = images[name] if name in images else INPUTS[predictor_class(name).input_flag]
            rows.append(bench(name, inputs[:2] if args.dry else inputs, repeats, env, parts_too=not args.dry))
    print(f"{'model':<14}{'inputs':>7}{'wall s':>9}{'cpu s':>8}{'import s':>10}{'load s':>8}{'predict s':>11}{'modules':>9}  < 5 s")
    for r in rows:
        if "error" in r:
            print(f"{r['model']:<14} error: {r['error']}")
            continue
        print(f"{r['model']:<14}{r['inputs']:>7}{r['wall_s_median']:>9.2f}{r['cpu_s_median']:>8.2f}{r.get('import_s', 0):>10.2f}"
              f"{r.get('load_s', 0):>8.2f}{r.get('predict_s', 0):>11.2f}{r.get('modules', 0):>9}  {r['under_5s']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]  # the machine is shared: a load above ~1 slows every number here
    args.out.write_text(json.dumps({"command": "python bench/predictors.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                                    "machine": machine(), "load_average_1min": load,
                                    "load_average_1min_before": load_before, "rows": rows}, indent=1) + "\n")
    print(f"written: {args.out}")
    return args.out


if __name__ == "__main__":
    main()
