"""Plots of an image classifier: the test confusion matrix and attention maps.

The attention map of an image is what the model reads when it pools: the weights of
``SequenceHead(pooling="attention")``'s query over the pixel/patch vectors, or, for other
poolings, the attention of one backbone block (``Backbone.capture_attention``) averaged over
heads and over queries (the CLS row with a CLS token). It is reshaped to the encoder's
grid, upsampled to the image and overlaid on it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from sklearn.metrics import ConfusionMatrixDisplay  # noqa: E402
from torch import Tensor  # noqa: E402


def _to(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device) if isinstance(v, Tensor) else v for k, v in batch.items()}


@torch.no_grad()
def test_predictions(model, loader) -> tuple[np.ndarray, np.ndarray]:
    """(true labels, predicted labels) of every batch of ``loader``, model in eval mode."""
    was_training = model.training
    model.eval()
    ys, ps = [], []
    try:
        for batch in loader:
            batch = _to(batch, model.device)
            ys.append(batch["y"].cpu())
            ps.append(model(batch).argmax(-1).cpu())
    finally:
        model.train(was_training)
    return torch.cat(ys).numpy(), torch.cat(ps).numpy()


def plot_confusion(model, loader, class_names: list[str], out: Path) -> Path:
    y, p = test_predictions(model, loader)
    n = len(class_names)
    size = max(4.0, 0.45 * n + 2)
    fig, ax = plt.subplots(figsize=(size, size))
    ConfusionMatrixDisplay.from_predictions(y, p, labels=list(range(n)), display_labels=class_names,
                                            ax=ax, colorbar=False,
                                            xticks_rotation=45 if n > 10 or max(map(len, class_names)) > 4 else "horizontal")
    ax.set_title(f"test set: accuracy {np.mean(y == p):.4f} ({int(np.sum(y != p))} errors of {len(y)})")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


@torch.no_grad()
def attention_grid(model, batch: dict, layer: int = -1) -> tuple[Tensor, Tensor, str]:
    """(B, gh, gw) attention over the encoder's grid, (B, C) class probabilities, a title.

    Uses the pooling query's weights when the head pools by attention, otherwise block
    ``layer``'s attention averaged over heads and queries (or the CLS query's row).
    """
    was_training = model.training
    model.eval()
    try:
        batch = _to(batch, model.device)
        H, W = batch["image"].shape[-2:]
        gh, gw = model.encoder.grid(H, W)
        if getattr(model.head, "pooling", None) == "attention":
            probs = model(batch).softmax(-1)
            weights = model.head.last_pool_weights  # (B, N)
            what = "pooling query"
        else:
            with model.backbone.capture_attention(layer) as get:
                probs = model(batch).softmax(-1)
                a = get().mean(1)  # (B, N, N) mean over heads
            vs_cls = getattr(model.backbone, "cls", None) is not None
            if vs_cls:  # the CLS query's row over the image vectors (its self-weight left out)
                weights = a[:, 0, 1:] / a[:, 0, 1:].sum(-1, keepdim=True)  # (B, N)
            else:
                weights = a.mean(1)  # (B, N) mean over queries
            what = f"block {layer}, {'CLS query' if vs_cls else 'mean over queries'}"
    finally:
        model.train(was_training)
    return weights.reshape(-1, gh, gw).cpu(), probs.cpu(), what


def plot_attention_maps(model, batch: dict, class_names: list[str], out: Path,
                        display: Callable[[Tensor], np.ndarray], layer: int = -1) -> Path:
    grid, probs, what = attention_grid(model, batch, layer)
    images = batch["image"]
    B = images.shape[0]
    H, W = images.shape[-2:]
    # upsample the grid to the image (nearest keeps patch borders visible)
    up = F.interpolate(grid[:, None], size=(H, W), mode="nearest")[:, 0].numpy()  # (B, H, W)
    fig, axes = plt.subplots(2, B, figsize=(1.8 * B, 3.9), squeeze=False)
    for i in range(B):
        img = display(images[i])
        p, k = probs[i].max(-1)
        for row in (0, 1):
            ax = axes[row, i]
            ax.imshow(img, cmap="gray" if img.ndim == 2 else None)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[1, i].imshow(up[i], cmap="jet", alpha=0.5)
        true = class_names[int(batch["y"][i])] if "y" in batch else "?"
        axes[0, i].set_title(f"true {true}\npred {class_names[int(k)]} ({p:.2f})", fontsize=8)
    fig.suptitle(f"attention over the image ({what})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
