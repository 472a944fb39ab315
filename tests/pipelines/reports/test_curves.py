"""curves.png: a panel for the training loss and every validation metric, also a task's."""

from __future__ import annotations

import pandas as pd

from vecset.pipelines.reports.curves import curve_columns, curves_figure


def test_curve_columns_include_every_tasks_validation_metrics(tmp_path):
    df = pd.DataFrame({"epoch": [0, 0, 1, 1], "step": [9, 9, 19, 19],
                       "train_loss_epoch": [1.0, None, 0.5, None], "train_loss_step": [1.1, None, 0.6, None],
                       "val_loss": [None, 0.9, None, 0.4], "above/val_acc": [None, 0.6, None, 0.8],
                       "mean/val_rmse": [None, 0.3, None, 0.2], "above/train_loss_epoch": [0.7, None, 0.3, None],
                       "mean/test_rmse": [None, None, None, None], "above/test_acc": [None, None, None, 0.9]})
    per_epoch = df.groupby("epoch").last()
    assert curve_columns(per_epoch) == ["train_loss_epoch", "val_loss", "above/val_acc", "mean/val_rmse",
                                        "above/train_loss_epoch"]
    df.to_csv(tmp_path / "metrics.csv", index=False)
    fig = curves_figure(tmp_path / "metrics.csv")
    drawn = [ax.get_title() for ax in fig.axes if ax.axison]
    assert drawn == curve_columns(per_epoch) and len(fig.axes) == 8  # two rows of four panels
    assert curves_figure(tmp_path / "missing.csv") is None
