"""Attention maps of an image classifier (``attention_maps.png``); its confusion matrix is the
classification report (classification.py).

The attention map of an image is what the model reads when it pools: the weights of
``SequenceHead(pooling="attention")``'s query over the pixel/patch vectors, or, for other
poolings, the attention of one backbone block (``Backbone.capture_attention``) over queries
(the CLS row with a CLS token), averaged over heads or one panel per head (``heads``). It is
reshaped to the encoder's grid, upsampled to the image and drawn translucent over the image
in grey, on one colour scale with a colour bar; the title says what the query is. The parts declare what is read
(``contracts/abilities.py``): ``PoolingWeights`` or ``AttentionWeights``, and ``Grid``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from torch import Tensor

from vecset.contracts.abilities import AttentionWeights, Grid, has_cls, pools_by_attention
from vecset.pipelines.reports.attention_heads import (
    Heads,
    attention_colorbar,
    block_name,
    check_heads,
    heads_name,
    pick_heads,
    shared_max,
)
from vecset.pipelines.reports.base import Report, ReportContext, plt
from vecset.pipelines.reports.outputs import inference, to_model

log = logging.getLogger(__name__)

CMAP = "inferno"


def attention_panels(model, batch: dict, layer: int = -1, heads: Heads = "mean") -> tuple[Tensor, Tensor, list[str], str]:
    """(B, P, gh, gw) attention over the encoder's grid, one panel per chosen head (``heads``:
    attention_heads.py), (B, C) class probabilities, a label per panel and what the query is.

    Uses the pooling query's weights when the head pools by attention (one panel: the head's
    one query), otherwise block ``layer``'s attention: the CLS query's row over the image
    vectors (renormalized without its weight on itself) with a CLS token, else the mean over
    the queries. Each panel sums to 1 over the grid.
    """
    with inference(model):
        batch = to_model(batch, model)
        H, W = batch["image"].shape[-2:]
        gh, gw = model.encoder.grid(H, W)
        if pools_by_attention(model.head):
            probs = model(batch).softmax(-1)
            weights = model.head.last_pool_weights[:, None]  # (B, 1, N)
            labels, what = ["pooling query"], "the head's pooling query"
        else:
            with model.backbone.capture_attention(layer) as get:
                probs = model(batch).softmax(-1)
                a = get()  # (B, H, N, N)
            if has_cls(model.backbone):  # the CLS query's row over the image vectors
                rows = a[:, :, 0, 1:]  # (B, H, N - 1)
                rows = rows / rows.sum(-1, keepdim=True)
                what = "CLS query"
            else:
                rows = a.mean(2)  # (B, H, N) mean over queries
                what = "mean over all queries"
            picked = [pick_heads(r, heads) for r in rows]
            weights = torch.stack([p[0] for p in picked])  # (B, P, N)
            labels = picked[0][1]
            what = f"{what}, {block_name(model.backbone, layer)}, {heads_name(heads)}"
    B, P = weights.shape[:2]
    return weights.reshape(B, P, gh, gw).float().cpu(), probs.float().cpu(), labels, what


def attention_grid(model, batch: dict, layer: int = -1) -> tuple[Tensor, Tensor, str]:
    """(B, gh, gw) attention over the encoder's grid (mean over heads), (B, C) class
    probabilities, what the query is (``attention_panels`` with ``heads="mean"``)."""
    grid, probs, _, what = attention_panels(model, batch, layer, "mean")
    return grid[:, 0], probs, what


def attention_maps_figure(model, batch: dict, class_names: list[str],
                          display: Callable[[Tensor], np.ndarray], layer: int = -1, heads: Heads = "mean"):
    """Row 1: the images with true and predicted class; then a row per chosen head: the image
    in grey under its attention (translucent), on one colour scale with a colour bar."""
    grid, probs, labels, what = attention_panels(model, batch, layer, heads)
    images = batch["image"]
    B, P = grid.shape[:2]
    H, W = images.shape[-2:]
    # upsample the grid to the image (nearest keeps patch borders visible)
    up = F.interpolate(grid, size=(H, W), mode="nearest").numpy()  # (B, P, H, W)
    vmax = shared_max([up])
    fig, axes = plt.subplots(1 + P, B, figsize=(1.7 * B + 1.2, 1.75 * (1 + P) + 0.7), squeeze=False,
                             layout="constrained")
    for i in range(B):
        img = display(images[i])
        grey = img if img.ndim == 2 else img.mean(-1)
        p, k = probs[i].max(-1)
        axes[0, i].imshow(img, cmap="gray" if img.ndim == 2 else None)
        true = class_names[int(batch["y"][i])] if "y" in batch else "?"
        axes[0, i].set_title(f"true {true}\npred {class_names[int(k)]} ({p:.2f})", fontsize=8)
        for j in range(P):
            ax = axes[1 + j, i]
            ax.imshow(grey, cmap="gray")
            ax.imshow(up[i, j], cmap=CMAP, alpha=0.7, vmin=0.0, vmax=vmax, interpolation="nearest")
        for ax in axes[:, i]:
            ax.set_xticks([])
            ax.set_yticks([])
    for j, label in enumerate(labels):
        axes[1 + j, 0].set_ylabel(label, fontsize=8)
    n = grid.shape[-1] * grid.shape[-2]
    # the bar opaque: the maps are drawn translucent over the image
    attention_colorbar(fig, ScalarMappable(Normalize(0.0, vmax), CMAP), axes[1:, :].ravel().tolist())
    fig.suptitle(f"attention over the image: {what}\n(uniform: 1/{n} = {1 / n:.3f} per patch)", fontsize=9)
    return fig


class AttentionMapsReport(Report):
    """``attention_maps.png``: the first ``images`` test images and the attention over them.

    Args:
        images: how many test images to show (0: none).
        layer: the backbone block whose attention is drawn when the head does not pool by
            attention.
        heads: ``"mean"`` (one row: the mean over the block's heads), ``"each"`` (a row per
            head) or a list of head indices.
    """

    def __init__(self, images: int = 8, layer: int = -1, heads: str | list[int] = "mean") -> None:
        self.images, self.layer, self.heads = images, layer, check_heads(heads)

    def write(self, ctx: ReportContext) -> list[Path]:
        if self.images <= 0:
            return []
        if not isinstance(ctx.model.encoder, Grid):
            log.info("no attention maps: the encoder %s declares no grid of vectors", type(ctx.model.encoder).__name__)
            return []
        if not (pools_by_attention(ctx.model.head) or isinstance(ctx.model.backbone, AttentionWeights)):
            # a convolutional baseline with mean pooling has no attention to show
            log.info("no attention maps: %s has no attention to capture and the head does not pool by attention",
                     type(ctx.model.backbone).__name__)
            return []
        batch = ctx.data.test_batch(self.images)  # read only when there is something to draw
        if batch is None:
            return []
        fig = attention_maps_figure(ctx.model, batch, list(ctx.data.class_names), ctx.data.display_image, self.layer,
                                    self.heads)
        return [ctx.save_figure(fig, "attention_maps.png", dpi=110)]
