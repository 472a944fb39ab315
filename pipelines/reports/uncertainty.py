"""The uncertainty report of a regression model that gives a std (a mean-variance head, or a
deep ensemble: ``pipelines/ensemble.py``): how well the predicted std tells the real error.

Scores, in the target's units, on the test split (``test_uncertainty.json``):

- NLL: the mean Gaussian negative log-likelihood of the measured values under N(mean, std^2)
  (``torch.nn.functional.gaussian_nll_loss`` with ``full=True``);
- Spearman's rank correlation between |error| and std (scipy): does a larger std mean a larger
  error? (Chemprop's and Scalia et al. 2020's ranking score);
- miscalibration area (Tran et al. 2020, "Methods for comparing uncertainty quantifications
  for material property predictions"; uncertainty-toolbox): for expected coverages p in
  [0, 1], the share of measured values inside the central p-interval of N(mean, std^2); the
  mean |observed - expected| over a uniform grid of p, 0 for a calibrated model.

Plots: ``calibration.png`` (observed vs expected coverage) and ``parity_errorbars.png``
(predicted vs measured with +-1 std bars).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from scipy.stats import norm, spearmanr

from vecset.contracts.abilities import regression_std
from vecset.pipelines.reports.base import Report, ReportContext, plt
from vecset.pipelines.reports.outputs import ScoredBatch, collect_test_outputs
from vecset.pipelines.reports.regression import parity_panel


def gaussian_nll(mean: np.ndarray, std: np.ndarray, true: np.ndarray) -> float:
    """Mean of 0.5 (log(2 pi var) + (y - mean)^2 / var) over every value."""
    m, s, y = (torch.as_tensor(np.asarray(a, dtype=np.float64)).flatten() for a in (mean, std, true))
    return float(torch.nn.functional.gaussian_nll_loss(m, y, s**2, full=True, eps=0.0))


def coverage_curve(mean: np.ndarray, std: np.ndarray, true: np.ndarray,
                   points: int = 101) -> tuple[np.ndarray, np.ndarray]:
    """Expected coverages p (points,) in [0, 1] and the observed share of values whose
    |error| <= std * Phi^-1((1 + p) / 2), the half-width of the central p-interval."""
    z = np.abs(np.asarray(true, np.float64) - mean).flatten() / np.asarray(std, np.float64).flatten()
    expected = np.linspace(0.0, 1.0, points)
    half = norm.ppf(0.5 + expected / 2)  # (points,), inf at p = 1
    observed = (z[None, :] <= half[:, None]).mean(1)
    return expected, observed


def miscalibration_area(mean: np.ndarray, std: np.ndarray, true: np.ndarray, points: int = 101) -> float:
    expected, observed = coverage_curve(mean, std, true, points)
    return float(np.trapezoid(np.abs(observed - expected), expected))


def uncertainty_scores(mean: np.ndarray, std: np.ndarray, true: np.ndarray) -> dict:
    """The scores above; the rank correlation is None (with ``spearman_undefined``) when the
    std is the same for every prediction (it ranks nothing)."""
    err = np.abs(np.asarray(true, np.float64) - mean).flatten()
    s = np.asarray(std, np.float64).flatten()
    out = {"rmse": float(np.sqrt(np.mean(err**2))), "nll": gaussian_nll(mean, std, true),
           "spearman_abs_error_std": None, "miscalibration_area": miscalibration_area(mean, std, true),
           "mean_std": float(np.mean(std)), "count": int(err.size)}
    if np.ptp(s) > 0:
        out["spearman_abs_error_std"] = float(spearmanr(err, s).statistic)
    else:
        out["spearman_undefined"] = "the std is the same for every prediction"
    return out


def calibration_figure(mean: np.ndarray, std: np.ndarray, true: np.ndarray, title: str = ""):
    expected, observed = coverage_curve(mean, std, true)
    fig, ax = plt.subplots(figsize=(4.2, 4))
    ax.plot([0, 1], [0, 1], color="grey", lw=1, label="calibrated")
    ax.plot(expected, observed, lw=2, label="model")
    ax.fill_between(expected, expected, observed, alpha=0.2)
    ax.set_xlabel("expected share inside the central interval")
    ax.set_ylabel("observed share")
    ax.set_title(f"{title}miscalibration area {miscalibration_area(mean, std, true):.3f}")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def parity_errorbar_figure(mean: np.ndarray, std: np.ndarray, true: np.ndarray, name: str):
    fig, ax = plt.subplots(figsize=(4.4, 4.2))
    rmse = parity_panel(ax, mean, true, name, std=std)
    ax.set_title(f"test RMSE {rmse:.3f}, mean std {np.mean(std):.3f} (n={np.size(true)})")
    fig.tight_layout()
    return fig


def write_uncertainty(mean: np.ndarray, std: np.ndarray, true: np.ndarray, names: list[str], out_dir: Path,
                      save_figure=None) -> list[Path]:
    """``test_uncertainty.json`` (overall and per target), ``calibration.png`` and
    ``parity_errorbars.png`` (first target) for (n, T) arrays in target units."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    mean, std, true = (np.asarray(a, np.float64).reshape(len(a), -1) for a in (mean, std, true))
    for t, n in enumerate(names):  # a zero std makes the NLL NaN and the coverage a step: no result
        bad = ~(np.isfinite(std[:, t]) & (std[:, t] > 0))
        if bad.any():
            raise ValueError(f"std must be positive and finite: {int(bad.sum())} of {len(std)} predictions of "
                             f"{n!r} have std {std[bad, t][0]:g}")
    scores = uncertainty_scores(mean, std, true)
    scores["per_target"] = {n: uncertainty_scores(mean[:, t], std[:, t], true[:, t]) for t, n in enumerate(names)}
    path = out_dir / "test_uncertainty.json"
    path.write_text(json.dumps(scores, indent=2, allow_nan=False))

    def save(fig, name):
        if save_figure is not None:
            return save_figure(fig, name)
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        return out_dir / name

    return [path, save(calibration_figure(mean[:, 0], std[:, 0], true[:, 0], f"{names[0]}: "), "calibration.png"),
            save(parity_errorbar_figure(mean[:, 0], std[:, 0], true[:, 0], names[0]), "parity_errorbars.png")]


def outputs_mean_std(head, outputs: list[ScoredBatch]) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Mean and std (n, T) in target units from ``head.mean_std`` of the kept outputs (std None
    when the head gives none) and the measured values."""
    means, stds, trues = [], [], []
    with torch.no_grad():
        for o in outputs:
            mean, std = head.mean_std(o.output.to(next(head.parameters(), o.output).device))
            means.append(mean.cpu())
            stds.append(None if std is None else std.cpu())
            trues.append(o.batch["y"].reshape(mean.shape))
    std = None if stds[0] is None else torch.cat(stds).numpy()
    return torch.cat(means).numpy(), std, torch.cat(trues).numpy()


def predicted_mean_std(model, loader) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Mean and std (n, T) in target units from ``model.head.mean_std`` (std None when the
    head gives none) and the measured values, over ``loader``."""
    return outputs_mean_std(model.head, collect_test_outputs(model, loader, keep_output=True))


class UncertaintyReport(Report):
    """The files above for a regression head whose ``mean_std`` gives a std (none otherwise)."""

    def write(self, ctx: ReportContext) -> list[Path]:
        if not regression_std(ctx.model.head):
            return []
        mean, std, true = outputs_mean_std(ctx.model.head, ctx.test_outputs())
        if std is None:
            return []
        names = list(ctx.data.target_names or [f"value_{t}" for t in range(mean.shape[1])])
        return write_uncertainty(mean, std, true, names, ctx.out_dir, ctx.save_figure)
