"""The worst mistakes of an image classifier: the test images it got wrong with the highest
confidence, in a grid titled with the true class, the predicted class and its probability.

The most confident errors are where a model is surest and wrong: mislabeled images, classes
that look alike (on Fashion-MNIST, shirts against T-shirts, pullovers and coats), or a
shortcut the model learned.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from torch import Tensor  # noqa: E402

from vecset.pipelines.reports.base import Report, ReportContext  # noqa: E402
from vecset.pipelines.reports.outputs import ScoredBatch  # noqa: E402


def worst_mistakes(outputs: list[ScoredBatch], n: int) -> list[dict]:
    """The ``n`` wrongly classified images of the test pass (``outputs``: batches with the
    head's logits) with the highest predicted probability, most confident first: dicts of
    ``image`` (C, H, W), ``y``, ``pred``, ``prob`` (of the prediction), ``prob_true`` and ``id``."""
    kept: list[dict] = []
    for o in outputs:
        batch = o.batch
        probs = o.output.float().softmax(-1)  # (B, C)
        prob, pred = probs.max(-1)  # (B,)
        wrong = (pred != batch["y"]).nonzero().flatten()
        for i in wrong[prob[wrong].argsort(descending=True)[:n]].tolist():  # this batch's worst n
            kept.append({"image": batch["image"][i], "y": int(batch["y"][i]), "pred": int(pred[i]),
                         "prob": float(prob[i]), "prob_true": float(probs[i, batch["y"][i]]),
                         "id": int(batch["ids"][i])})
        kept = sorted(kept, key=lambda m: -m["prob"])[:n]
    return kept


def worst_mistakes_figure(outputs: list[ScoredBatch], class_names: list[str],
                          display: Callable[[Tensor], np.ndarray], n: int = 16):
    """A grid of the ``n`` most confident mistakes of the test pass (``worst_mistakes``), each
    titled true / predicted (probability); ``display`` turns a model input into pixels."""
    mistakes = worst_mistakes(outputs, n)
    cols = max(1, min(len(mistakes), math.ceil(math.sqrt(n))))
    rows = max(1, math.ceil(len(mistakes) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(1.9 * cols, 2.1 * rows + 0.4), squeeze=False)
    for ax in axes.flat:
        ax.set_axis_off()
    for ax, m in zip(axes.flat, mistakes, strict=False):
        img = display(m["image"])
        ax.imshow(img, cmap="gray" if img.ndim == 2 else None)
        ax.set_title(f"true {class_names[m['y']]} ({m['prob_true']:.2f})\npred {class_names[m['pred']]} "
                     f"({m['prob']:.2f})", fontsize=7)
    title = (f"the {len(mistakes)} most confident test mistakes\n(probability of the true class, of the prediction)"
             if mistakes else "no test mistakes")
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    return fig


class MistakesReport(Report):
    """``worst_mistakes.png``: the ``images`` test images wrongly classified with the highest
    probability (0: none)."""

    def __init__(self, images: int = 16) -> None:
        self.images = images

    def write(self, ctx: ReportContext) -> list[Path]:
        if self.images <= 0:
            return []
        fig = worst_mistakes_figure(ctx.test_outputs(), list(ctx.data.class_names), ctx.data.display_image,
                                    n=self.images)
        return [ctx.save_figure(fig, "worst_mistakes.png", dpi=110)]
