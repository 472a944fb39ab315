"""The report of a two-class task (blood-brain-barrier penetration): ROC-AUC, PR-AUC (average
precision) and accuracy on the test split with torchmetrics, the class balance of every split,
and the ROC and precision-recall curves (``test_binary.json``, ``roc_pr.png``). Class 1 (the
second of ``class_names``) is the positive class.

ROC-AUC is undefined when the labels hold one class, PR-AUC when they hold no positive:
torchmetrics then returns 0.0 with a warning; here the score is None (null in the JSON) with
the reason beside it (``roc_auc_undefined``, ``pr_auc_undefined``), also said on the console."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torchmetrics.functional.classification import (
    binary_accuracy,
    binary_auroc,
    binary_average_precision,
    binary_precision_recall_curve,
    binary_roc,
)

from vecset.pipelines.reports.base import Report, ReportContext, plt
from vecset.pipelines.reports.outputs import ScoredBatch


def positive_probabilities(outputs: list[ScoredBatch]) -> tuple[torch.Tensor, torch.Tensor]:
    """P(class 1) (n,) from the head's logits (softmax) and the labels (n,) of the test pass."""
    probs = torch.cat([o.output.float().softmax(-1)[:, 1] for o in outputs])
    labels = torch.cat([o.batch["y"].long() for o in outputs])
    return probs, labels


def binary_scores(prob: torch.Tensor, label: torch.Tensor, names: list[str] | None = None) -> dict:
    """ROC-AUC, PR-AUC (average precision) and accuracy at 0.5, with the counts; a score the
    labels leave undefined is None with ``<score>_undefined``, the reason (``names``: the two
    classes as declared, for it).

    Shapes:
        prob (n,) P(class 1), label (n,) 0/1 -> a dict of floats and ints
    """
    neg, pos_name = names or ("class 0", "class 1")
    n, pos = int(len(label)), int(label.sum())
    out = {"roc_auc": None, "pr_auc": None, "accuracy": float(binary_accuracy(prob, label, threshold=0.5)),
           "count": n, "positives": pos, "positive_share": pos / n if n else None}
    if 0 < pos < n:
        out["roc_auc"] = float(binary_auroc(prob, label))
    else:
        out["roc_auc_undefined"] = (f"the labels hold one class only ({pos_name if pos else neg!r}, {n} of {n}): "
                                    "ROC-AUC needs both")
    if pos:
        out["pr_auc"] = float(binary_average_precision(prob, label))
    else:
        out["pr_auc_undefined"] = f"no positive ({pos_name!r}) among the {n} labels: PR-AUC needs one"
    return out


def undefined_scores(scores: dict, split: str = "test") -> list[str]:
    """Console lines for the scores ``binary_scores`` left undefined."""
    return [f"{split} {label} undefined: {scores[f'{key}_undefined']}"
            for key, label in (("roc_auc", "ROC-AUC"), ("pr_auc", "PR-AUC")) if f"{key}_undefined" in scores]


def roc_pr_figure(prob: torch.Tensor, label: torch.Tensor, positive: str, names: list[str] | None = None):
    s = binary_scores(prob, label, names)
    fig, (a, b) = plt.subplots(1, 2, figsize=(8.4, 4))
    if s["roc_auc"] is not None:
        fpr, tpr, _ = binary_roc(prob, label)
        a.plot(fpr.numpy(), tpr.numpy())
        a.set_title(f"ROC-AUC {s['roc_auc']:.3f}")
    else:  # no curve to draw: one class
        a.set_title("ROC-AUC undefined: one class")
    a.plot([0, 1], [0, 1], color="grey", lw=1)
    a.set(xlabel="false positive rate", ylabel="true positive rate")
    if s["pr_auc"] is not None:
        precision, recall, _ = binary_precision_recall_curve(prob, label)
        b.plot(recall.numpy(), precision.numpy())
        b.axhline(s["positive_share"], color="grey", lw=1)
        b.set_title(f"PR-AUC {s['pr_auc']:.3f}")
    else:
        b.set_title("PR-AUC undefined: no positive")
    b.set(xlabel=f"recall ({positive})", ylabel="precision")
    for ax in (a, b):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


class BinaryReport(Report):
    """``test_binary.json`` and ``roc_pr.png`` of a task with two ``class_names``."""

    def write(self, ctx: ReportContext) -> list[Path]:
        names = list(ctx.data.class_names)
        if len(names) != 2:
            return []
        prob, label = positive_probabilities(ctx.test_outputs())
        scores = {"positive_class": names[1], **binary_scores(prob, label, names)}
        balance = ctx.data.class_balance()
        if balance is not None:
            scores["class_balance"] = balance
        path = ctx.out_dir / "test_binary.json"
        path.write_text(json.dumps(scores, indent=2, allow_nan=False, default=lambda v: np.asarray(v).tolist()))
        for line in undefined_scores(scores):
            print(f"{line} ({path})")
        return [path, ctx.save_figure(roc_pr_figure(prob, label, names[1], names), "roc_pr.png", dpi=110)]
