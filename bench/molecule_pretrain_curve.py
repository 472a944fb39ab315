"""The pretext validation curve of a pretraining run (issue #58): per validation (each epoch, or
every ``val_check_interval`` steps), the validation loss,
masked-atom accuracy and descriptor RMSE (z units) from the run's metrics.csv, with the run's
steps and molecules seen (steps x ``--batch_size``); writes a JSON and, with matplotlib, a PNG.
``--compare LABEL=JSON`` (repeated) draws earlier runs' curves (this script's JSON) beside it,
over the molecules seen.

    python bench/molecule_pretrain_curve.py runs/pretrain_molecules_stream/version_0 \
        --out bench/results/molecule_pretrain_moses_curve.json --command "vecset fit ..." \
        --label "1.58 M" --compare "500 k=bench/results/molecule_pretrain_moses500k_curve.json"
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

KEYS = ("val_loss", "val_atom_acc", "val_desc_rmse")


def curve(metrics_csv: Path, batch_size: int | None = None) -> list[dict]:
    """One row per validation: epoch, step and the ``KEYS`` logged there; with ``batch_size``,
    also ``molecules``, the training molecules seen by then ((step + 1) x batch_size: Lightning
    logs a validation after step k with the step index k, 0-based)."""
    if not Path(metrics_csv).is_file():
        raise SystemExit(f"error: {metrics_csv}: no such file (the run folder of a fit: its metrics.csv)")
    rows = []
    with open(metrics_csv, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("val_loss"):
                step = int(row["step"])
                seen = {"molecules": (step + 1) * batch_size} if batch_size else {}
                rows.append({"epoch": int(row["epoch"]), "step": step, **seen,
                             **{k: round(float(row[k]), 4) for k in KEYS if row.get(k)}})
    return rows


def comparison(spec: str, batch_size: int) -> tuple[str, list[dict]]:
    """``LABEL=JSON`` -> the label and that JSON's curve, each row with ``molecules`` (from its
    own ``batch_size`` where it recorded one, else this run's)."""
    label, sep, path = spec.partition("=")
    if not sep or not label or not path:
        raise SystemExit(f"error: --compare {spec!r}: expected LABEL=JSON, e.g. '500 k=bench/results/x.json'")
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: --compare {path}: cannot read it as this script's JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("curve"), list):
        raise SystemExit(f"error: --compare {path}: no 'curve' list (is it this script's JSON?)")
    size = data.get("batch_size") or batch_size
    return label, [r if "molecules" in r else {**r, "molecules": (r["step"] + 1) * size} for r in data["curve"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="the run folder (its metrics.csv)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="", help="the command that made the run")
    ap.add_argument("--notes", default="")
    ap.add_argument("--batch_size", type=int, default=64, help="the run's batch size (molecules a step)")
    ap.add_argument("--label", default="this run", help="this run's name in the figure's legend")
    ap.add_argument("--compare", action="append", default=[], metavar="LABEL=JSON",
                    help="an earlier run's curve (this script's JSON) drawn beside this one")
    args = ap.parse_args()
    run = Path(args.run)
    others = [comparison(c, args.batch_size) for c in args.compare]
    rows = curve(run / "metrics.csv", args.batch_size)
    if not rows:
        raise SystemExit(f"error: {run / 'metrics.csv'}: no validation rows (val_loss)")
    out = Path(args.out)
    compared = "".join(f" --compare '{c}'" for c in args.compare)
    out.write_text(json.dumps({"command": f"python bench/molecule_pretrain_curve.py {args.run} --out {args.out}"
                                          f" --batch_size {args.batch_size}{compared}",
                               "run_command": args.command, "run": str(run), "notes": args.notes,
                               "batch_size": args.batch_size, "curve": rows}, indent=1) + "\n")
    print("epoch   step  molecules  " + "  ".join(KEYS))
    for r in rows:
        print(f"{r['epoch']:5d} {r['step']:6d} {r['molecules']:10d}  "
              + "  ".join(f"{r.get(k, float('nan')):.4f}" for k in KEYS))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 3, figsize=(10, 3))
    for ax, k in zip(axes, KEYS, strict=True):
        for label, points in [(args.label, rows), *others]:
            ax.plot([r["molecules"] / 1e6 for r in points], [r.get(k) for r in points], marker="o", ms=3,
                    label=label)
        ax.set_xlabel("training molecules seen (millions)")
        ax.set_title(k)
    if others:
        axes[0].legend()
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=80)
    print(f"wrote {out} and {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
