"""Deep ensembles (Lakshminarayanan et al. 2017) of a regression or classification config: ``k``
members trained one after another on the same split, differing only in ``seed_everything``
(initialization and shuffling), then combined on the test split.

    vecset ensemble --members 5 --config configs/freesolv.yaml [vecset fit options]

Each member is an ordinary ``vecset fit`` run (``runs/<config>/version_<n>/``: its own best
checkpoint by its own validation curve, its own results.json and reports), so nothing in the
model classes changes and a member can be inspected or re-tested alone. Why not one module
holding k models: re-initializing copies of an injected encoder would undo the encoders' own
initializations (zeroed biases, small embeddings), and k runs in one process cost the same
time on these CPUs. A member that fails stops the ensemble with an error naming it; the
members finished before are kept, and the same command run again continues from them
(``runs/<config>_ensemble/unfinished_members.json`` lists them until the ensemble is combined).
The combination goes to ``runs/<config>_ensemble/version_<n>/``:

- ``predictions.csv``: per test molecule the ensemble mean and std in the target's units (the
  ``<target>`` and ``<target>_std`` columns, as ``vecset predict`` writes them) and each member's mean;
- mean = the members' mean; variance = the members' spread (population variance of their
  means) plus, for mean-variance members, the mean of their variances (the mixture's variance);
- ``test_regression.json`` and ``parity.png`` (as a single run), ``test_uncertainty.json``,
  ``calibration.png`` and ``parity_errorbars.png`` (``reports/uncertainty.py``), ``ensemble.json``;
  one member with an MSE head has no spread: no std column and no uncertainty files, and
  ``ensemble.json``'s ``uncertainty`` is null with the reason (``uncertainty_undefined``).

A classification head's members are combined by the mean of their softmax probabilities:
``predictions.csv`` has, per test molecule, the ensemble's ``prediction`` and ``probability``
(of the predicted class, as ``vecset predict`` writes them), ``P(<class>)`` per class, the
``measured`` class and each member's probabilities; ``ensemble.json`` has validation and test
accuracy (and ROC-AUC, PR-AUC for two classes) of the ensemble and of each member; with two
classes the run also writes ``test_binary.json`` and ``roc_pr.png`` as a single run does.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import sys
from pathlib import Path

import numpy as np
import torch

from vecset.contracts.abilities import regression_std, task_kind
from vecset.pipelines.cli import RUNS_DIR, config_name, run_cli
from vecset.pipelines.training.run_folders import claim_version


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

    model = load_member(checkpoint)
    if not regression_std(model.head):
        raise ValueError(f"{checkpoint}: not a regression head (SequenceHead task=regression)")
    return predicted_mean_std(model, split_loader(datamodule, split))


def member_probabilities(checkpoint: str, datamodule, split: str = "test") -> tuple[np.ndarray, np.ndarray]:
    """One classification member's softmax probabilities (n, C) on ``split`` and the labels (n,)."""
    from vecset.pipelines.reports.outputs import inference, to_device

    model = load_member(checkpoint)
    probs, labels = [], []
    with inference(model):
        for batch in split_loader(datamodule, split):
            probs.append(model(to_device(batch, model.device)).softmax(-1).cpu())
            labels.append(batch["y"].long())
    return torch.cat(probs).numpy(), torch.cat(labels).numpy()


def split_loader(datamodule, split: str):
    """The data module's own loader of ``split`` (``val`` or ``test``), in its order."""
    return {"val": datamodule.val_dataloader, "test": datamodule.test_dataloader}[split]()


def load_member(checkpoint: str):
    from vecset.pipelines.training.task import TaskModule

    model = TaskModule.load_from_checkpoint(checkpoint, map_location="cpu")
    if task_kind(model.head) not in ("regression", "classification"):
        raise ValueError(f"{checkpoint}: an ensemble combines SequenceHead regression or classification heads, "
                         f"this head's task is {task_kind(model.head)!r}")
    return model


def class_scores(prob: np.ndarray, label: np.ndarray, names: list[str] | None = None) -> dict:
    """Accuracy of the argmax; ROC-AUC, PR-AUC and accuracy at 0.5 of P(class 1) for two classes
    (None with the reason where the labels leave them undefined: ``binary_scores``)."""
    from vecset.pipelines.reports.binary import binary_scores

    scores = {"accuracy": float(np.mean(prob.argmax(1) == label)), "count": int(len(label))}
    if prob.shape[1] == 2:
        scores.update(binary_scores(torch.from_numpy(prob[:, 1]).float(), torch.from_numpy(label), names))
    return scores


def score_text(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


@contextlib.contextmanager
def member_argv():
    """``sys.argv`` without the ensemble's own options while a member's CLI parses its
    arguments: the member gets them all as ``args``, and LightningCLI warns ("args parameter is
    intended to run from within Python...") when it sees command-line arguments as well."""
    saved = sys.argv
    sys.argv = saved[:1]
    try:
        yield
    finally:
        sys.argv = saved


UNFINISHED = "unfinished_members.json"  # in runs/<config>_ensemble/, until the ensemble is combined


def finished_members(root: Path, fit_args: list[str]) -> dict[int, str]:
    """Seed -> run directory of the members an earlier, unfinished run of the same ensemble
    (the same ``fit_args``) finished: their results.json and checkpoint are still there."""
    path = root / UNFINISHED
    if not path.exists():
        return {}
    out = {}
    for r in json.loads(path.read_text()):
        done = Path(r["run_dir"]) / "results.json"
        if r["fit_args"] == fit_args and done.exists():
            ckpt = json.loads(done.read_text()).get("checkpoint")
            if ckpt and Path(ckpt).exists():
                out[int(r["seed"])] = r["run_dir"]
    return out


def record_member(root: Path, fit_args: list[str], seed: int, run_dir: str) -> None:
    path = root / UNFINISHED
    rows = json.loads(path.read_text()) if path.exists() else []
    rows = [r for r in rows if not (r["fit_args"] == fit_args and int(r["seed"]) == seed)]
    root.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([*rows, {"fit_args": fit_args, "seed": seed, "run_dir": run_dir}], indent=2))


def run_ensemble(members: int, fit_args: list[str], seed: int = 0) -> Path:
    """Fit ``members`` runs of ``fit_args`` (seeds seed..seed+members-1), combine them; the
    ensemble's folder.

    A member that fails ends the ensemble with an error naming it; the members finished
    before are kept (``runs/<config>_ensemble/unfinished_members.json``), and running the same
    command again continues from them instead of training them again."""
    if members < 1:
        raise ValueError(f"members must be at least 1, got {members}")
    root = Path(RUNS_DIR) / f"{config_name(fit_args)}_ensemble"
    earlier = finished_members(root, fit_args)
    runs, cli = [], None
    # the molecules are featurized once: the first member writes them to the data module's
    # feature cache (the molecule data's cache, on by default), the others read them from there
    with member_argv():
        for m in range(members):
            s = seed + m
            if s in earlier:
                run_dir = Path(earlier[s])
                print(f"ensemble member {m} (seed {s}): finished by an earlier run, {run_dir}: not trained again")
            else:
                try:
                    cli = run_cli(["fit", *fit_args, "--seed_everything", str(s)])
                except Exception as e:
                    done = ", ".join(f"{r['seed']}: {r['run_dir']}" for r in runs) or "none"
                    raise RuntimeError(
                        f"ensemble member {m} of {members} (seed {s}) failed: {type(e).__name__}: {e}. The finished "
                        f"members (seed: run) are kept: {done}; run the same command again to continue from "
                        f"them") from e
                run_dir = Path(cli.trainer.log_dir)
                record_member(root, fit_args, s, str(run_dir))
            runs.append({"seed": s, "run_dir": str(run_dir), **json.loads((run_dir / "results.json").read_text())})
        if cli is None:  # every member was finished before: the data module alone, set up
            cli = run_cli([*fit_args, "--seed_everything", str(seed + members - 1)], run=False)
            cli.datamodule.setup("fit")
    dm = cli.datamodule  # the same split for every member: the split depends on the data config only
    out_dir = root / f"version_{claim_version(root)}"  # created exclusively: two ensembles never share one
    task = task_kind(cli.model.head)
    summary = (combine_classifiers if task == "classification" else combine_regressors)(runs, dm, out_dir)
    summary = {"members": members, "fit_args": fit_args, **summary,
               "member_best_val": [r["best_val"] for r in runs],
               "train_seconds": round(sum(r.get("train_seconds") or r["wall_seconds"] for r in runs), 2),
               "setup_seconds": round(sum(r.get("setup_seconds") or 0.0 for r in runs), 2),
               "runs": [{k: r.get(k) for k in ("seed", "run_dir", "checkpoint", "best_val", "wall_seconds",
                                               "setup_seconds", "train_seconds", "epochs")} for r in runs]}
    (out_dir / "ensemble.json").write_text(json.dumps(summary, indent=2))
    (root / UNFINISHED).unlink(missing_ok=True)  # combined: a new run of the command trains anew
    return out_dir


def combine_regressors(runs: list[dict], dm, out_dir: Path) -> dict:
    """The regression members' combined test predictions and reports in ``out_dir``; the summary."""
    from vecset.pipelines.reports.regression import errors, parity_figure
    from vecset.pipelines.reports.uncertainty import plt, write_uncertainty

    members = len(runs)
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
    # one MSE member has no spread: its std is 0 everywhere, which is no uncertainty at all
    undefined = ("one member with an MSE head (regression_loss mse) gives no spread: an uncertainty needs 2 or "
                 "more members or a mean-variance head (regression_loss gaussian_nll)"
                 if members == 1 and variances is None else None)
    # the ensemble's validation RMSE, for choosing settings without the test split
    val = [member_outputs(r["checkpoint"], dm, "val") for r in runs]
    val_rmse = float(np.sqrt(np.mean((np.mean([v[0] for v in val], 0) - val[0][2]) ** 2)))

    names = list(dm.target_names)
    items = dm.splits["test"]
    with open(out_dir / "predictions.csv", "w", newline="") as f:
        w = csv.writer(f)
        stds = [] if undefined else [f"{n}_std" for n in names]  # no std column, as vecset predict of an MSE head
        w.writerow(["line", "smiles", *names, *stds, "measured",
                    *(f"member{k}_{n}" for k in range(members) for n in names)])
        for i, it in enumerate(items):
            w.writerow([it["line"], it["smiles"], *mean[i], *([] if undefined else std[i]), *true[i],
                        *means[:, i].reshape(-1)])
    (out_dir / "test_regression.json").write_text(json.dumps(errors(mean, true, names), indent=2))
    fig = parity_figure(mean, true, names)
    fig.savefig(out_dir / "parity.png", dpi=110)
    plt.close(fig)
    summary = {"val_rmse": val_rmse, "test_rmse": errors(mean, true, names)["rmse"],
               "member_test_rmse": [float(np.sqrt(np.mean((m - true) ** 2))) for m in means]}
    if undefined:
        summary.update(uncertainty=None, uncertainty_undefined=undefined)
        told = f"uncertainty undefined: {undefined}"
    else:
        write_uncertainty(mean, std, true, names, out_dir)
        summary["uncertainty"] = json.loads((out_dir / "test_uncertainty.json").read_text())
        told = (f"NLL {summary['uncertainty']['nll']:.3f}, miscalibration area "
                f"{summary['uncertainty']['miscalibration_area']:.3f}")
    print(f"ensemble of {members}: validation RMSE {val_rmse:.4f}, test RMSE {summary['test_rmse']:.4f} (members "
          f"{', '.join(f'{v:.4f}' for v in summary['member_test_rmse'])}), {told}: {out_dir}")
    return summary


def combine_classifiers(runs: list[dict], dm, out_dir: Path) -> dict:
    """The classification members' mean probabilities on the test split, their reports in
    ``out_dir``; the summary (validation scores for choosing settings, test scores)."""
    from vecset.pipelines.reports.base import plt
    from vecset.pipelines.reports.binary import roc_pr_figure, undefined_scores

    members, names = len(runs), list(dm.class_names)
    scores, split_probs = {}, {}
    for split in ("val", "test"):
        outs = [member_probabilities(r["checkpoint"], dm, split) for r in runs]
        label = outs[0][1]
        for (_, lab), r in zip(outs, runs, strict=True):
            if not np.array_equal(lab, label):
                raise ValueError(f"{r['run_dir']}: its {split} split differs from the first member's")
        probs = np.stack([o[0] for o in outs])  # (K, n, C)
        split_probs[split] = probs, label
        scores[split] = {"ensemble": class_scores(probs.mean(0), label, names),
                         "members": [class_scores(p, label, names) for p in probs]}
    for r, s in zip(runs, scores["test"]["members"], strict=True):
        # the member's test accuracy recomputed here must be the one Lightning logged for it
        if abs(r["test"]["test_acc"] - s["accuracy"]) > 1e-6:
            raise RuntimeError(f"{r['run_dir']}: test accuracy {s['accuracy']} recomputed, {r['test']['test_acc']} logged")
    probs, label = split_probs["test"]
    prob = probs.mean(0)
    with open(out_dir / "predictions.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["line", "smiles", "prediction", "probability", *(f"P({c})" for c in names), "measured",
                    *(f"member{k}_P({c})" for k in range(members) for c in names)])
        for i, it in enumerate(dm.splits["test"]):
            w.writerow([it["line"], it["smiles"], names[prob[i].argmax()], round(float(prob[i].max()), 6),
                        *np.round(prob[i], 6), names[label[i]], *np.round(probs[:, i].reshape(-1), 6)])
    if len(names) == 2:
        binary = {"positive_class": names[1], **scores["test"]["ensemble"]}
        if dm.class_balance() is not None:
            binary["class_balance"] = dm.class_balance()
        (out_dir / "test_binary.json").write_text(json.dumps(binary, indent=2, allow_nan=False))
        for split in ("val", "test"):
            for line in undefined_scores(scores[split]["ensemble"], split):
                print(line)
        fig = roc_pr_figure(torch.from_numpy(prob[:, 1]).float(), torch.from_numpy(label), names[1], names)
        fig.savefig(out_dir / "roc_pr.png", dpi=110)
        plt.close(fig)
    key = "roc_auc" if len(names) == 2 else "accuracy"
    print(f"ensemble of {members}: validation {key} {score_text(scores['val']['ensemble'][key])}, test {key} "
          f"{score_text(scores['test']['ensemble'][key])} (members "
          f"{', '.join(score_text(s[key]) for s in scores['test']['members'])}): {out_dir}")
    return {"val": scores["val"], "test": scores["test"]}


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(prog="vecset ensemble", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, required=True, help="ensemble size k")
    ap.add_argument("--seed", type=int, default=0, help="member m trains with seed_everything seed + m")
    args, fit_args = ap.parse_known_args(argv)
    return run_ensemble(args.members, fit_args, args.seed)


if __name__ == "__main__":  # the old spelling, kept for one release
    print("python -m vecset.pipelines.ensemble is now `vecset ensemble` (the same options)", file=sys.stderr)
    main()
