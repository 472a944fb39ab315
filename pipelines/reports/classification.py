"""The report of any classification or labeling task (images, graph nodes, tokens, vectors):
per-class test accuracy (``test_per_class.json``) and the confusion matrix with the class
names (``confusion_matrix.png``, scikit-learn's ConfusionMatrixDisplay).

It scores the head's ``metric_inputs`` on the test split, the pairs the logged test accuracy
counts, so its accuracy is that metric; targets below 0 (padding, unlabelled nodes: the
heads' ignore index) are left out as the metric leaves them out.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import ConfusionMatrixDisplay, confusion_matrix

from vecset.pipelines.reports.base import Report, ReportContext, plt


def scored_labels(ctx: ReportContext) -> tuple[np.ndarray, np.ndarray]:
    """(true, predicted) class indices of every scored test label, (n,) each."""
    outs = ctx.test_outputs()
    y = torch.cat([torch.as_tensor(o.target).flatten() for o in outs]).numpy()
    p = torch.cat([torch.as_tensor(o.pred).flatten() for o in outs]).numpy()
    keep = y >= 0
    return y[keep], p[keep]


def confusion_figure(y: np.ndarray, p: np.ndarray, class_names: list[str]):
    n = len(class_names)
    size = max(4.0, 0.45 * n + 2)
    fig, ax = plt.subplots(figsize=(size, size))
    ConfusionMatrixDisplay.from_predictions(y, p, labels=list(range(n)), display_labels=class_names,
                                            ax=ax, colorbar=False, xticks_rotation=45 if n > 10 or max(map(len, class_names)) > 4 else "horizontal")
    ax.set_title(f"test set: accuracy {np.mean(y == p):.4f} ({int(np.sum(y != p))} errors of {len(y)})")
    fig.tight_layout()
    return fig


def per_class_report(y: np.ndarray, p: np.ndarray, class_names: list[str]) -> dict:
    """Accuracy overall and per true class (recall), the counts and the confusion matrix
    (rows: true class, columns: predicted)."""
    n = len(class_names)
    conf = confusion_matrix(y, p, labels=list(range(n)))
    rows = [{"class": class_names[c], "count": int(conf[c].sum()), "accuracy": float(conf[c, c] / conf[c].sum())}
            for c in range(n) if conf[c].sum()]
    return {"accuracy": float(np.mean(y == p)) if len(y) else float("nan"), "count": int(len(y)),
            "errors": int(np.sum(y != p)), "per_class": rows, "classes": list(class_names),
            "confusion": conf.tolist()}


class ClassificationReport(Report):
    """``test_per_class.json`` and ``confusion_matrix.png`` of a task with ``class_names``."""

    def write(self, ctx: ReportContext) -> list[Path]:
        names = list(ctx.data.class_names)
        y, p = scored_labels(ctx)
        path = ctx.out_dir / "test_per_class.json"
        path.write_text(json.dumps(per_class_report(y, p, names), indent=2))
        return [path, ctx.save_figure(confusion_figure(y, p, names), "confusion_matrix.png", dpi=110)]
