"""Training-time augmentation on the dev split: configs/speech_frames.yaml as shipped (SpecAugment
in the encoder) vs without SpecAugment vs with speed perturbation vs with additive noise (vs both),
each a ``vecset fit`` with the same epochs and seeds. The score is the best dev frame accuracy
over the epochs (the checkpoint monitor). The test split is never read: the CLI's test after fit
is pointed at the dev list (``--data.init_args.splits.test dev.lst``).

Usage:
    python bench/speech_augment_dev.py --epochs 10 --seeds 0 1     # runs every variant
    python bench/speech_augment_dev.py --epochs 15 --only baseline nospec -- --data.init_args.root data/speech_full
    python bench/speech_augment_dev.py --collect baseline=runs/speech_frames/version_0 speed=... \
        --note "load ..."      # the table from finished runs (variants: baseline nospec speed noise both)
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

CONFIG = "configs/speech_frames.yaml"
SPEC_OFF = ["--model.init_args.encoder.init_args.freq_mask_param", "0",
            "--model.init_args.encoder.init_args.time_mask_param", "0"]
# the config had SpecAugment 8 / 20 when these variants were measured; it now has it off (chosen on
# dev with them): every variant names its SpecAugment setting, so the rows keep their meaning
SPEC_ON = ["--model.init_args.encoder.init_args.freq_mask_param", "8",
           "--model.init_args.encoder.init_args.time_mask_param", "20"]
SPEED = ["--data.init_args.augment.speed_factors", "[0.9, 1.0, 1.1]"]
NOISE = ["--data.init_args.augment.noise_snr_db", "[10, 40]", "--data.init_args.augment.noise_prob", "0.5"]
VARIANTS = {
    "baseline (SpecAugment 8/20, as shipped)": SPEC_ON,
    "no SpecAugment": SPEC_OFF,
    "+ speed 0.9/1.0/1.1": SPEC_ON + SPEED,
    "+ noise 10-40 dB on half": SPEC_ON + NOISE,
    "+ speed + noise": SPEC_ON + SPEED + NOISE,
}
SHORT = {"baseline": "baseline (SpecAugment 8/20, as shipped)", "nospec": "no SpecAugment",
         "speed": "+ speed 0.9/1.0/1.1", "noise": "+ noise 10-40 dB on half", "both": "+ speed + noise"}


def dev_curve(run: Path) -> list[float]:
    """The dev frame accuracy of every epoch of a run (its metrics.csv)."""
    with open(run / "metrics.csv") as f:
        return [float(r["val_acc"]) for r in csv.DictReader(f) if r.get("val_acc")]


def command(name: str, seed: int, epochs: int, extra: list[str] = ()) -> list[str]:
    return ["vecset", "fit", "--config", CONFIG, "--seed_everything", str(seed), "--trainer.max_epochs", str(epochs),
            "--data.init_args.splits.test", "dev.lst", "--plots", "false", "--trainer.enable_progress_bar", "false",
            *VARIANTS[SHORT[name]], *extra]


def row(name: str, run: Path) -> dict:
    """A finished run's dev scores, with the settings its saved config.yaml shows."""
    import yaml

    curve = dev_curve(run)
    results = json.loads((run / "results.json").read_text())
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    enc, data = cfg["model"]["init_args"]["encoder"]["init_args"], cfg["data"]["init_args"]
    best = max(range(len(curve)), key=curve.__getitem__)
    return {"variant": SHORT[name], "seed": cfg["seed_everything"], "run": str(run),
            "settings": {"freq_mask_param": enc["freq_mask_param"], "time_mask_param": enc["time_mask_param"],
                         "speed_factors": data.get("speed_factors"), "noise_snr_db": data.get("noise_snr_db"),
                         "noise_prob": data.get("noise_prob"), "test_list": data["test"]},
            "best_dev_acc": curve[best], "best_epoch": best, "last_dev_acc": curve[-1],
            "dev_acc_per_epoch": [round(x, 4) for x in curve], "epochs": results.get("epochs"),
            "wall_seconds": results.get("wall_seconds"),
            "command": " ".join(f"'{c}'" if " " in c else c for c in command(name, cfg["seed_everything"],
                                                                            results.get("epochs")))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--only", nargs="+", choices=sorted(SHORT), help="variants to run (default: all)")
    ap.add_argument("--collect", nargs="+", metavar="VARIANT=RUN_DIR", help="table from finished runs")
    ap.add_argument("--out", default="bench/results/speech_augment_dev.json")
    ap.add_argument("--note", default="", help="how the machine was loaded")
    ap.add_argument("extra", nargs="*", help="after --: more vecset fit arguments (e.g. --data.init_args.root ...)")
    a = ap.parse_args()
    rows = []
    if a.collect:
        for spec in a.collect:
            name, run = spec.split("=", 1)
            rows.append(row(name, Path(run)))
    else:
        runs = Path("runs/speech_frames")
        for name in a.only or list(SHORT):
            for seed in a.seeds:
                before = set(runs.glob("version_*"))
                subprocess.run([sys.executable, "-m", "vecset", *command(name, seed, a.epochs, a.extra)[1:]],
                               check=True)
                (run,) = set(runs.glob("version_*")) - before
                rows.append(row(name, run))
    print(f"{'variant':42s} {'seed':>4s} {'best dev acc':>12s} {'epoch':>5s} {'last':>6s}")
    for r in rows:
        print(f"{r['variant']:42s} {r.get('seed', ''):>4} {r['best_dev_acc']:12.4f} {r['best_epoch']:5d} "
              f"{r['last_dev_acc']:6.4f}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"config": CONFIG, "split": "dev (val)", "machine": platform.platform(),
                               "cpus": os.cpu_count(), "note": a.note, "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
