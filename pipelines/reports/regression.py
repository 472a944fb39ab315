"""The report of a regression task (molecule properties, a set's mean): predicted vs measured
on the test split (``parity.png``, one panel per target) and the test errors in target units
(``test_regression.json``). It scores the head's ``metric_inputs`` (values in target units),
so its overall RMSE and MAE are the logged test_rmse and test_mae."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from vecset.pipelines.reports.base import Report, ReportContext, plt


def scored_values(ctx: ReportContext) -> tuple[np.ndarray, np.ndarray]:
    """(predicted, true) test values in target units, each (n, T) in the loader's order."""
    outs = ctx.test_outputs()
    pred = torch.cat([torch.as_tensor(o.pred).reshape(len(o.batch["ids"]), -1) for o in outs]).numpy()
    true = torch.cat([torch.as_tensor(o.target).reshape(len(o.batch["ids"]), -1) for o in outs]).numpy()
    return pred, true


def parity_figure(pred: np.ndarray, true: np.ndarray, names: list[str]):
    """One panel per target: predicted vs measured, RMSE in the title."""
    pred, true = np.asarray(pred).reshape(len(pred), -1), np.asarray(true).reshape(len(true), -1)
    k = pred.shape[1]
    fig, axes = plt.subplots(1, k, figsize=(4.2 * k, 4), squeeze=False)
    for t, ax in enumerate(axes[0]):
        rmse = parity_panel(ax, pred[:, t], true[:, t], names[t])
        ax.set_title(f"{names[t]}: test RMSE {rmse:.3f} (n={len(true)})")
    fig.tight_layout()
    return fig


def parity_panel(ax, pred: np.ndarray, true: np.ndarray, name: str, std: np.ndarray | None = None) -> float:
    """Predicted vs measured on ``ax`` with the diagonal (error bars of +-1 ``std`` when given);
    returns the RMSE for the caller's title."""
    p, y = np.asarray(pred, np.float64).ravel(), np.asarray(true, np.float64).ravel()
    lo, hi = float(min(p.min(), y.min())), float(max(p.max(), y.max()))
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1)
    if std is None:
        ax.scatter(y, p, s=12, alpha=0.7)
    else:
        ax.errorbar(y, p, yerr=np.asarray(std, np.float64).ravel(), fmt="o", ms=3, alpha=0.7, elinewidth=0.8)
    ax.set_xlabel(f"measured {name}")
    ax.set_ylabel(f"predicted {name}" + (" (+-1 std)" if std is not None else ""))
    ax.grid(alpha=0.3)
    return float(np.sqrt(np.mean((p - y) ** 2)))


def errors(pred: np.ndarray, true: np.ndarray, names: list[str]) -> dict:
    """RMSE and MAE over all values (as the test metrics count them) and per target."""
    d = pred.astype(np.float64) - true  # (n, T)
    return {"rmse": float(np.sqrt(np.mean(d ** 2))), "mae": float(np.mean(np.abs(d))), "count": int(len(d)),
            "per_target": {name: {"rmse": float(np.sqrt(np.mean(d[:, t] ** 2))), "mae": float(np.mean(np.abs(d[:, t])))}
                           for t, name in enumerate(names)}}


class ParityReport(Report):
    """``parity.png`` and ``test_regression.json`` of a task with ``target_names``."""

    def write(self, ctx: ReportContext) -> list[Path]:
        pred, true = scored_values(ctx)
        names = list(ctx.data.target_names or [f"value_{t}" for t in range(pred.shape[1])])
        path = ctx.out_dir / "test_regression.json"
        path.write_text(json.dumps(errors(pred, true, names), indent=2))
        return [ctx.save_figure(parity_figure(pred, true, names), "parity.png", dpi=110), path]
