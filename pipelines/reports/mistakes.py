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
import torch  # noqa: E402
from pytorch_lightning.utilities import move_data_to_device  # noqa: E402
from torch import Tensor  # noqa: E402


@torch.no_grad()
def worst_mistakes(model, loader, n: int) -> list[dict]:
    """The ``n`` wrongly classified images of ``loader`` with the highest predicted probability,
    most confident first: dicts of ``image`` (C, H, W), ``y``, ``pred``, ``prob`` (of the
    prediction), ``prob_true`` and ``id``. Model in eval mode; kept on the CPU."""
    was_training = model.training
    model.eval()
    kept: list[dict] = []
    try:
        for batch in loader:
            batch = move_data_to_device(batch, model.device)
            probs = model(batch).softmax(-1)  # (B, C)
            prob, pred = probs.max(-1)  # (B,)
            wrong = (pred != batch["y"]).nonzero().flatten()
            for i in wrong[prob[wrong].argsort(descending=True)[:n]].tolist():  # this batch's worst n
                kept.append({"image": batch["image"][i].cpu(), "y": int(batch["y"][i]), "pred": int(pred[i]),
                             "prob": float(prob[i]), "prob_true": float(probs[i, batch["y"][i]]),
                             "id": int(batch["ids"][i])})
            kept = sorted(kept, key=lambda m: -m["prob"])[:n]
    finally:
        model.train(was_training)
    return kept


def plot_worst_mistakes(model, loader, class_names: list[str], out: Path,
                        display: Callable[[Tensor], np.ndarray], n: int = 16) -> Path:
    """A grid of the ``n`` most confident mistakes on ``loader`` (``worst_mistakes``), each
    titled true / predicted (probability); ``display`` turns a model input into pixels."""
    mistakes = worst_mistakes(model, loader, n)
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
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return Path(out)
