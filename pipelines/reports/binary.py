"""The report of a two-class task (blood-brain-barrier penetration): ROC-AUC, PR-AUC (average
precision) and accuracy on the test split with torchmetrics, the class balance of every split,
and the ROC and precision-recall curves (``test_binary.json``, ``roc_pr.png``). Class 1 (the
second of ``class_names``) is the positive class."""

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
from vecset.pipelines.reports.outputs import inference, to_device


def positive_probabilities(model, loader) -> tuple[torch.Tensor, torch.Tensor]:
    """P(class 1) (n,) from the head's logits (softmax) and the labels (n,) over ``loader``."""
    probs, labels = [], []
    with inference(model):
        for batch in loader:
            out = model(to_device(batch, model.device))
            probs.append(out.softmax(-1)[:, 1].cpu())
            labels.append(batch["y"].long())
    return torch.cat(probs), torch.cat(labels)


def binary_scores(prob: torch.Tensor, label: torch.Tensor) -> dict:
    """ROC-AUC, PR-AUC (average precision) and accuracy at 0.5, with the counts."""
    return {"roc_auc": float(binary_auroc(prob, label)), "pr_auc": float(binary_average_precision(prob, label)),
            "accuracy": float(binary_accuracy(prob, label, threshold=0.5)), "count": int(len(label)),
            "positives": int(label.sum()), "positive_share": float(label.float().mean())}


def roc_pr_figure(prob: torch.Tensor, label: torch.Tensor, positive: str):
    fpr, tpr, _ = binary_roc(prob, label)
    precision, recall, _ = binary_precision_recall_curve(prob, label)
    s = binary_scores(prob, label)
    fig, (a, b) = plt.subplots(1, 2, figsize=(8.4, 4))
    a.plot(fpr.numpy(), tpr.numpy())
    a.plot([0, 1], [0, 1], color="grey", lw=1)
    a.set(xlabel="false positive rate", ylabel="true positive rate", title=f"ROC-AUC {s['roc_auc']:.3f}")
    b.plot(recall.numpy(), precision.numpy())
    b.axhline(s["positive_share"], color="grey", lw=1)
    b.set(xlabel=f"recall ({positive})", ylabel="precision", title=f"PR-AUC {s['pr_auc']:.3f}")
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
        prob, label = positive_probabilities(ctx.model, ctx.data.test_dataloader())
        scores = {"positive_class": names[1], **binary_scores(prob, label)}
        if hasattr(ctx.data, "class_balance"):
            scores["class_balance"] = ctx.data.class_balance()
        path = ctx.out_dir / "test_binary.json"
        path.write_text(json.dumps(scores, indent=2, default=lambda v: np.asarray(v).tolist()))
        return [path, ctx.save_figure(roc_pr_figure(prob, label, names[1]), "roc_pr.png", dpi=110)]
