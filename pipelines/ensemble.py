"""Deep ensembles of a regression config (Lakshminarayanan et al. 2017): ``k`` members trained
one after another on the same split, differing only in ``seed_everything`` (initialization
and shuffling), then combined on the test split.

    python -m vecset.pipelines.ensemble --members 5 --config configs/freesolv.yaml [vecset fit options]

Each member is an ordinary ``vecset fit`` run (``runs/<config>/version_<n>/``: its own best
checkpoint by its own validation curve, its own results.json and reports), so nothing in the
model classes changes and a member can be inspected or re-tested alone. Why not one module
holding k models: re-initializing copies of an injected encoder would undo the encoders' own
initializations (zeroed biases, small embeddings), and k runs in one process cost the same
time on these CPUs. The combination goes to ``runs/<config>_ensemble/version_<n>/``:

- ``predictions.csv``: per test molecule the ensemble mean and std in the target's units (the
  ``<target>`` and ``<target>_std`` columns, as ``vecset predict`` writes them) and each member's mean;
- mean = the members' mean; variance = the members' spread (population variance of their
  means) plus, for mean-variance members, the mean of their variances (the mixture's variance);
- ``test_regression.json`` and ``parity.png`` (as a single run), ``test_uncertainty.json``,
  ``calibration.png`` and ``parity_errorbars.png`` (``reports/uncertainty.py``), ``ensemble.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

from vecset.pipelines.cli import RUNS_DIR, config_name, next_version, run_cli


def combine(means: np.ndarray, variances: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Members' means (K, n, T) and variances (K, n, T) or None -> ensemble mean and std (n, T)."""
    mean = means.mean(0)
    var = means.var(0)  # ddof 0: the spread of the K members themselves
    if variances is not None:
        var = var + variances.mean(0)
    return mean, np.sqrt(var)


def member_outputs(checkpoint: str, datamodule, split: str = "test") -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """One member's mean and std (n, T) in target units on ``split`` and the measured values."""
    from vecset.pipelines.reports.uncertainty import predicted_mean_std
    from vecset.pipelines.training.task import TaskModule

    model = TaskModule.load_from_checkpoint(checkpoint, map_location="cpu")
    if getattr(model.head, "task", None) != "regression" or not hasattr(model.head, "mean_std"):
        raise ValueError(f"{checkpoint}: an ensemble combines regression heads (SequenceHead task=regression)")
    return predicted_mean_std(model, datamodule._loader(datamodule.splits[split]))


def run_ensemble(members: int, fit_args: list[str], seed: int = 0) -> Path:
    """Fit ``members`` runs of ``fit_args`` (seeds seed..seed+members-1), combine them; the
    ensemble's folder."""
    from vecset.pipelines.reports.regression import errors, parity_figure
    from vecset.pipelines.reports.uncertainty import plt, write_uncertainty

    if members < 1:
        raise ValueError(f"members must be at least 1, got {members}")
    runs = []
    for m in range(members):
        cli = run_cli(["fit", *fit_args, "--seed_everything", str(seed + m)])
        run_dir = Path(cli.trainer.log_dir)
        runs.append({"seed": seed + m, "run_dir": str(run_dir),
                     **json.loads((run_dir / "results.json").read_text())})
    dm = cli.datamodule  # the same split for every member: the split depends on the data config only
    outs = [member_outputs(r["checkpoint"], dm) for r in runs]
    true = outs[0][2]
    for (m, _, t), r in zip(outs, runs, strict=True):
        if not np.array_equal(t, true):
            raise ValueError(f"{r['run_dir']}: its test split differs from the first member's")
        # the member's test RMSE recomputed here must be the one Lightning logged for it
        logged, again = r["test"]["test_rmse"], float(np.sqrt(np.mean((m - t) ** 2)))
        if abs(logged - again) > 1e-3 * max(1.0, logged):
            raise RuntimeError(f"{r['run_dir']}: test RMSE {again} recomputed, {logged} logged")
    means = np.stack([o[0] for o in outs])  # (K, n, T)
    variances = None if outs[0][1] is None else np.stack([o[1] ** 2 for o in outs])
    mean, std = combine(means, variances)
    # the ensemble's validation RMSE, for choosing settings without the test split
    val = [member_outputs(r["checkpoint"], dm, "val") for r in runs]
    val_rmse = float(np.sqrt(np.mean((np.mean([v[0] for v in val], 0) - val[0][2]) ** 2)))

    root = Path(RUNS_DIR) / f"{config_name(fit_args)}_ensemble"
    out_dir = root / f"version_{next_version(root)}"
    out_dir.mkdir(parents=True)
    names = list(dm.target_names)
    items = dm.splits["test"]
    with open(out_dir / "predictions.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["line", "smiles", *names, *(f"{n}_std" for n in names), "measured",
                    *(f"member{k}_{n}" for k in range(members) for n in names)])
        for i, it in enumerate(items):
            w.writerow([it["line"], it["smiles"], *mean[i], *std[i], *true[i], *means[:, i].reshape(-1)])
    (out_dir / "test_regression.json").write_text(json.dumps(errors(mean, true, names), indent=2))
    fig = parity_figure(mean, true, names)
    fig.savefig(out_dir / "parity.png", dpi=110)
    plt.close(fig)
    write_uncertainty(mean, std, true, names, out_dir)
    summary = {"members": members, "fit_args": fit_args, "val_rmse": val_rmse,
               "member_best_val": [r["best_val"] for r in runs],
               "test_rmse": errors(mean, true, names)["rmse"],
               "member_test_rmse": [float(np.sqrt(np.mean((m - true) ** 2))) for m in means],
               "train_seconds": round(sum(r["wall_seconds"] for r in runs), 2),
               "uncertainty": json.loads((out_dir / "test_uncertainty.json").read_text()),
               "runs": [{k: r[k] for k in ("seed", "run_dir", "checkpoint", "best_val", "wall_seconds", "epochs")}
                        for r in runs]}
    (out_dir / "ensemble.json").write_text(json.dumps(summary, indent=2))
    print(f"ensemble of {members}: validation RMSE {val_rmse:.4f}, test RMSE {summary['test_rmse']:.4f} (members "
          f"{', '.join(f'{v:.4f}' for v in summary['member_test_rmse'])}), NLL {summary['uncertainty']['nll']:.3f}, "
          f"miscalibration area {summary['uncertainty']['miscalibration_area']:.3f}: {out_dir}")
    return out_dir


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, required=True, help="ensemble size k")
    ap.add_argument("--seed", type=int, default=0, help="member m trains with seed_everything seed + m")
    args, fit_args = ap.parse_known_args(argv)
    return run_ensemble(args.members, fit_args, args.seed)


if __name__ == "__main__":
    main()
