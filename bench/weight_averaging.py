"""Weight averaging on vs off on configs/debug.yaml, 3 seeds: test metrics of the best-validation
checkpoint (with averaging: the averaged weights, chosen by their own validation score).

    .venv/bin/python bench/weight_averaging.py   # writes bench/results/weight_averaging.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEBUG = ROOT / "configs" / "debug.yaml"
EMA = {"class_path": "vecset.pipelines.training.averaging.EMAWeightAveraging", "init_args": {"decay": 0.99}}
SEEDS = (0, 1, 2)


def run(config: Path, seed: int, cwd: Path) -> dict:
    load = Path("/proc/loadavg").read_text().split()[:3]
    cmd = [str(ROOT / ".venv" / "bin" / "vecset"), "fit", "--config", str(config), "--seed_everything", str(seed),
           "--trainer.enable_progress_bar=false", "--plots=false"]
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, env=os.environ | {"PYTHONWARNINGS": "ignore"})
    found = sorted((cwd / "runs" / config.stem).glob("version_*/results.json"), key=lambda p: p.stat().st_mtime)
    r = json.loads(found[-1].read_text())
    return {"seed": seed, "test_acc": r["test"]["test_acc"], "test_loss": r["test"]["test_loss"],
            "best_val_acc": r["best_val"], "train_seconds": r["train_seconds"], "loadavg_at_start": " ".join(load)}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        ema = cwd / "debug_ema.yaml"
        config = yaml.safe_load(DEBUG.read_text())
        config["trainer"]["callbacks"].append(EMA)
        ema.write_text(yaml.safe_dump(config))
        rows = []
        for seed in SEEDS:
            for name, path in (("off", DEBUG), ("ema", ema)):
                rows.append({"averaging": name, **run(path, seed, cwd)})
                print(rows[-1], flush=True)
    summary = {}
    for name in ("off", "ema"):
        accs = [r["test_acc"] for r in rows if r["averaging"] == name]
        mean = sum(accs) / len(accs)
        summary[name] = {"test_acc_mean": mean,
                         "test_acc_std": (sum((a - mean) ** 2 for a in accs) / (len(accs) - 1)) ** 0.5}
    out = {
        "what": "configs/debug.yaml test metrics of the best-validation checkpoint, weight averaging off vs on (#32)",
        "ema": EMA,
        "command": ".venv/bin/python bench/weight_averaging.py (vecset fit --config configs/debug.yaml "
                   "--seed_everything SEED, and the same config with the EMA callback appended to trainer.callbacks)",
        "rows": rows,
        "summary": summary,
        "notes": "12 epochs of 32 steps (384 optimizer steps); decay 0.99 averages over about 100 steps. "
                 "train_seconds are wall times on a shared 2-core machine (loadavg_at_start): not a speed comparison.",
    }
    path = ROOT / "bench" / "results" / "weight_averaging.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
