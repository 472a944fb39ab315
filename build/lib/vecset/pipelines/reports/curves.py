"""Learning curves of a run (``curves.png``): the training loss and every validation metric
per epoch, from the CSV logger's metrics.csv. A multi-task run gets a panel for each task's
metrics too (``speech/val_acc``, ``freesolv/val_rmse``, ...)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from vecset.pipelines.reports.base import Report, ReportContext, plt

PANELS_PER_ROW = 4


def curve_columns(per_epoch: pd.DataFrame) -> list[str]:
    """Columns drawn: ``train_loss_epoch`` and ``val_*``, also under a task's prefix (``task/val_acc``)."""
    return [c for c in per_epoch.columns
            if c.rsplit("/", 1)[-1].startswith(("train_loss_epoch", "val_")) and per_epoch[c].notna().any()]


def curves_figure(metrics_csv: Path):
    """One panel per column of ``curve_columns``, or None when there is nothing to draw."""
    if not Path(metrics_csv).exists():
        return None
    df = pd.read_csv(metrics_csv)
    if "epoch" not in df:
        return None
    per_epoch = df.groupby("epoch").last()
    cols = curve_columns(per_epoch)
    if not cols:
        return None
    ncols = min(len(cols), PANELS_PER_ROW)
    nrows = (len(cols) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(4 * ncols, 3.2 * nrows), squeeze=False)
    for ax, c in zip(axes.flat, cols, strict=False):
        s = per_epoch[c].dropna()
        ax.plot(s.index, s.values, marker="o", ms=3)
        ax.set_title(c)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(cols):]:
        ax.axis("off")
    fig.tight_layout()
    return fig


class CurvesReport(Report):
    """``curves.png`` of the whole run (a context without a task)."""

    def __init__(self, metrics_csv: Path) -> None:
        self.metrics_csv = Path(metrics_csv)

    def write(self, ctx: ReportContext) -> list[Path]:
        fig = curves_figure(self.metrics_csv)
        return [] if fig is None else [ctx.save_figure(fig, "curves.png", dpi=100)]
