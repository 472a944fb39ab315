"""Attention maps of an image classifier (``attention_maps.png``); its confusion matrix is the
classification report (classification.py).

The attention map of an image is what the model reads when it pools: the weights of
``SequenceHead(pooling="attention")``'s query over the pixel/patch vectors, or, for other
poolings, the attention of one backbone block (``Backbone.capture_attention``) averaged over
heads and over queries (the CLS row with a CLS token). It is reshaped to the encoder's
grid, upsampled to the image and overlaid on it. The parts declare what is read
(``backbone/abilities.py``): ``PoolingWeights`` or ``AttentionWeights``, and ``Grid``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch.nn.functional as F
from torch import Tensor

from vecset.backbone.abilities import AttentionWeights, Grid, has_cls, pools_by_attention
from vecset.pipelines.reports.base import Report, ReportContext, plt
from vecset.pipelines.reports.outputs import inference, to_device

log = logging.getLogger(__name__)


def attention_grid(model, batch: dict, layer: int = -1) -> tuple[Tensor, Tensor, str]:
    """(B, gh, gw) attention over the encoder's grid, (B, C) class probabilities, a title.

    Uses the pooling query's weights when the head pools by attention, otherwise block
    ``layer``'s attention averaged over heads and queries (or the CLS query's row).
    """
    with inference(model):
        batch = to_device(batch, model.device)
        H, W = batch["image"].shape[-2:]
        gh, gw = model.encoder.grid(H, W)
        if pools_by_attention(model.head):
            probs = model(batch).softmax(-1)
            weights = model.head.last_pool_weights  # (B, N)
            what = "pooling query"
        else:
            with model.backbone.capture_attention(layer) as get:
                probs = model(batch).softmax(-1)
                a = get().mean(1)  # (B, N, N) mean over heads
            vs_cls = has_cls(model.backbone)
            if vs_cls:  # the CLS query's row over the image vectors (its self-weight left out)
                weights = a[:, 0, 1:] / a[:, 0, 1:].sum(-1, keepdim=True)  # (B, N)
            else:
                weights = a.mean(1)  # (B, N) mean over queries
            what = f"block {layer}, {'CLS query' if vs_cls else 'mean over queries'}"
    return weights.reshape(-1, gh, gw).cpu(), probs.cpu(), what


def attention_maps_figure(model, batch: dict, class_names: list[str],
                          display: Callable[[Tensor], np.ndarray], layer: int = -1):
    """Row 1: the images with true and predicted class; row 2: the attention over them."""
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
    return fig


class AttentionMapsReport(Report):
    """``attention_maps.png``: the first ``images`` test images and the attention over them.

    Args:
        images: how many test images to show (0: none).
        layer: the backbone block whose attention is drawn when the head does not pool by
            attention.
    """

    def __init__(self, images: int = 8, layer: int = -1) -> None:
        self.images, self.layer = images, layer

    def write(self, ctx: ReportContext) -> list[Path]:
        items = ctx.test_items(max(self.images, 0))
        if not items:
            return []
        if not isinstance(ctx.model.encoder, Grid):
            log.info("no attention maps: the encoder %s declares no grid of vectors", type(ctx.model.encoder).__name__)
            return []
        if not (pools_by_attention(ctx.model.head) or isinstance(ctx.model.backbone, AttentionWeights)):
            # a convolutional baseline with mean pooling has no attention to show
            log.info("no attention maps: %s has no attention to capture and the head does not pool by attention",
                     type(ctx.model.backbone).__name__)
            return []
        batch = ctx.data.collate(items)
        fig = attention_maps_figure(ctx.model, batch, list(ctx.data.class_names), ctx.data.display_image, self.layer)
        return [ctx.save_figure(fig, "attention_maps.png", dpi=110)]
