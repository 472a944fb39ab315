"""One backbone block's attention between the labelled vectors of one test sample
(``attention.png``): a graph's nodes (karate), a sentence's words (POS tagging).

Each row is a query vector, each column a key vector; a cell is the weight the query gives
that key (mean over the block's heads, or a heatmap per head: ``heads``; a row sums to 1 over
the keys drawn when all fit), on one colour scale with a colour bar in attention weight.
Rows and columns carry the vectors' labels (node names, word forms), so a reader can see
which neighbours a node attends to, or which words a word reads. With a CLS vector its row
and column are labelled ``CLS``. A data module that lists this report gives its example
through ``attention_example()``.
"""

from __future__ import annotations

import logging
import math
import textwrap
from pathlib import Path

import numpy as np

from vecset.contracts.abilities import AttentionWeights
from vecset.pipelines.reports.attention_heads import (
    Heads,
    attention_colorbar,
    check_heads,
    heads_name,
    pick_heads,
    shared_max,
)
from vecset.pipelines.reports.base import Report, ReportContext, plt
from vecset.pipelines.reports.outputs import inference, to_model

log = logging.getLogger(__name__)


def attention_matrices(model, batch: dict, layer: int = -1, max_vectors: int | None = None,
                       heads: Heads = "mean") -> tuple[np.ndarray, list[str], int]:
    """(P, Nq, Nk) attention of block ``layer`` of the batch's one sample, one panel per chosen
    head (``heads``: attention_heads.py), the first ``max_vectors`` queries and keys (the CLS
    vector first when the backbone has one); a label per panel and the block's number of heads.

    Shapes:
        batch (one sample) -> VectorSet (1, N, D) -> weights (1, H, N, N) -> (P, min(N, max), min(N, max))
    """
    with inference(model):
        vs = model.encoder(to_model(batch, model))
        w = model.backbone.attention_weights(vs, layer=layer, queries=max_vectors)  # (1, H, Nq, N)
    panels, labels = pick_heads(w[0].float().cpu(), heads)  # (P, Nq, N)
    a = panels.numpy()
    return (a[..., :max_vectors] if max_vectors else a), labels, int(w.shape[1])


def attention_matrix(model, batch: dict, layer: int = -1, max_vectors: int | None = None) -> tuple[np.ndarray, int]:
    """(Nq, Nk) attention of block ``layer``, mean over heads (``attention_matrices``), and the
    number of heads."""
    a, _, heads = attention_matrices(model, batch, layer, max_vectors, "mean")
    return a[0], heads


def attention_heatmap(weights: np.ndarray, labels: list[str], unit: str, title: str,
                      panel_labels: list[str] | None = None):
    """The matrix as a heatmap: query rows and key columns labelled, a colour bar in attention
    weight. ``weights`` (P, Nq, Nk) with P > 1 draws a panel per head (``panel_labels``) in a
    grid on one colour scale."""
    panels = weights[None] if weights.ndim == 2 else weights
    P, nq, nk = panels.shape
    size = min(14.0, max(5.0, 0.2 * max(nq, nk) + 2.5))
    fs = 8 if max(nq, nk) <= 30 else 6 if max(nq, nk) <= 60 else 4
    if P == 1:
        fig, ax = plt.subplots(figsize=(size + 1.0, size))
        axes = np.array([[ax]])
    else:
        cols = P if P <= 2 else math.ceil(math.sqrt(P))
        rows = math.ceil(P / cols)
        size = min(size, 6.5)
        fig, axes = plt.subplots(rows, cols, figsize=(size * cols + 1.0, size * rows + 0.6), squeeze=False,
                                 layout="constrained")
    vmax = shared_max(list(panels))
    flat = axes.ravel()
    for ax in flat[P:]:
        ax.axis("off")
    for j, ax in enumerate(flat[:P]):
        im = ax.imshow(panels[j], cmap="viridis", origin="upper", interpolation="nearest", vmin=0.0, vmax=vmax)
        first_col, last_row = j % axes.shape[1] == 0, j + axes.shape[1] >= P
        ax.set_xticks(range(nk), labels[:nk] if last_row else [""] * nk, rotation=90, fontsize=fs)
        ax.set_yticks(range(nq), labels[:nq] if first_col else [""] * nq, fontsize=fs)
        if last_row:
            ax.set_xlabel(f"key {unit} (attended to)")
        if first_col:
            ax.set_ylabel(f"query {unit} (attending)")
    if P == 1:
        flat[0].set_title(title, fontsize=8)
    else:
        for ax, label in zip(flat, panel_labels or [f"panel {j}" for j in range(P)], strict=False):
            ax.set_title(label, fontsize=9)
        fig.suptitle(title, fontsize=9)
    attention_colorbar(fig, im, list(flat[:P]) if P > 1 else flat[0])
    if P == 1:
        fig.tight_layout()
    return fig


class VectorAttentionReport(Report):
    """``attention.png``: block ``layer``'s attention between the vectors of the data module's
    ``attention_example()``, when the backbone has attention (a BiLSTM or window MLP has none).

    ``attention_example()`` returns (a one-sample batch, a label per vector, what a vector
    is: ``"node"``, ``"word"``, the sample's description).

    Args:
        layer: the backbone block.
        max_vectors: at most this many queries and keys are drawn (the first ones).
        heads: ``"mean"`` (one heatmap: the mean over the block's heads), ``"each"`` (one per
            head, side by side) or a list of head indices.
    """

    def __init__(self, layer: int = -1, max_vectors: int = 60, heads: str | list[int] = "mean") -> None:
        self.layer, self.max_vectors, self.heads = layer, max_vectors, check_heads(heads)

    def write(self, ctx: ReportContext) -> list[Path]:
        backbone = ctx.model.backbone
        if not isinstance(backbone, AttentionWeights):
            log.info("no attention.png: %s has no attention weights to plot", type(backbone).__name__)
            return []
        batch, labels, unit, source = ctx.data.attention_example()
        weights, panels, heads = attention_matrices(ctx.model, batch, self.layer, self.max_vectors, self.heads)
        if weights.shape[-1] == len(labels) + 1:  # the backbone prepended its CLS vector
            labels = ["CLS", *labels]
        n = len(labels)
        shown = "" if n <= self.max_vectors else f" (the first {self.max_vectors} of {n} {unit}s)"
        which = f"mean over {heads} heads" if self.heads == "mean" else f"{heads_name(self.heads)} of {heads}"
        title = "\n".join(textwrap.wrap(f"block {self.layer} attention, {which}{shown}: each row "
                                        f"is a query {unit}, its weights over the {unit}s it attends to", 90)
                          + textwrap.wrap(source, 90, max_lines=2))
        fig = attention_heatmap(weights, labels, unit, title, panels)
        return [ctx.save_figure(fig, "attention.png", dpi=110)]
