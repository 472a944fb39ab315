"""The pretext validation curve of a pretraining run (issue #58): per validation (each epoch, or
every ``val_check_interval`` steps), the validation loss,
masked-atom accuracy and descriptor RMSE (z units) from the run's metrics.csv, with the run's
molecules and steps; writes a JSON and, with matplotlib, a PNG.

    python bench/molecule_pretrain_curve.py runs/pretrain_molecules_stream/version_0 \
        --out bench/results/molecule_pretrain_moses_curve.json --command "vecset fit ..."
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

KEYS = ("val_loss", "val_atom_acc", "val_desc_rmse")


def curve(metrics_csv: Path) -> list[dict]:
    """One row per validation: epoch, step and the ``KEYS`` logged there."""
    rows = []
    with open(metrics_csv, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("val_loss"):
                rows.append({"epoch": int(row["epoch"]), "step": int(row["step"]),
                             **{k: round(float(row[k]), 4) for k in KEYS if row.get(k)}})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="the run folder (its metrics.csv)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="", help="the command that made the run")
    ap.add_argument("--notes", default="")
    args = ap.parse_args()
    run = Path(args.run)
    rows = curve(run / "metrics.csv")
    if not rows:
        raise SystemExit(f"error: {run / 'metrics.csv'}: no validation rows (val_loss)")
    out = Path(args.out)
    out.write_text(json.dumps({"command": f"python bench/molecule_pretrain_curve.py {args.run} --out {args.out}",
                               "run_command": args.command, "run": str(run), "notes": args.notes, "curve": rows},
                              indent=1) + "\n")
    print("epoch  step  " + "  ".join(KEYS))
    for r in rows:
        print(f"{r['epoch']:5d} {r['step']:5d}  " + "  ".join(f"{r.get(k, float('nan')):.4f}" for k in KEYS))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 3, figsize=(10, 3))
    for ax, k in zip(axes, KEYS, strict=True):
        ax.plot([r["step"] for r in rows], [r.get(k) for r in rows], marker="o")
        ax.set_xlabel("training step")
        ax.set_title(k)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=80)
    print(f"wrote {out} and {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
