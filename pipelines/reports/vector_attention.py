"""One backbone block's attention between the labelled vectors of one test sample
(``attention.png``): a graph's nodes (karate), a sentence's words (POS tagging).

Each row is a query vector, each column a key vector; a cell is the weight the query gives
that key (mean over the block's heads; a row sums to 1 over the keys drawn when all fit).
Rows and columns carry the vectors' labels (node names, word forms), so a reader can see
which neighbours a node attends to, or which words a word reads. With a CLS vector its row
and column are labelled ``CLS``. A data module that lists this report gives its example
through ``attention_example()``.
"""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import numpy as np

from vecset.backbone.abilities import AttentionWeights
from vecset.pipelines.reports.base import Report, ReportContext, plt
from vecset.pipelines.reports.outputs import inference, to_device

log = logging.getLogger(__name__)


def attention_matrix(model, batch: dict, layer: int = -1, max_vectors: int | None = None) -> tuple[np.ndarray, int]:
    """(Nq, Nk) attention of block ``layer``, mean over heads, of the batch's one sample (the
    first ``max_vectors`` queries and keys, the CLS vector first when the backbone has one),
    and the number of heads.

    Shapes:
        batch (one sample) -> VectorSet (1, N, D) -> weights (1, H, N, N) -> (min(N, max), min(N, max))
    """
    with inference(model):
        vs = model.encoder(to_device(batch, model.device))
        w = model.backbone.attention_weights(vs, layer=layer, queries=max_vectors)  # (1, H, Nq, N)
    a = w[0].float().mean(0).cpu().numpy()  # (Nq, N)
    return (a[:, :max_vectors] if max_vectors else a), int(w.shape[1])


def attention_heatmap(weights: np.ndarray, labels: list[str], unit: str, title: str):
    """The matrix as a heatmap: query rows and key columns labelled, a colour bar."""
    nq, nk = weights.shape
    size = min(14.0, max(5.0, 0.2 * max(nq, nk) + 2.5))
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    im = ax.imshow(weights, cmap="viridis", origin="upper", interpolation="nearest", vmin=0.0)
    fs = 8 if max(nq, nk) <= 30 else 6 if max(nq, nk) <= 60 else 4
    ax.set_xticks(range(nk), labels[:nk], rotation=90, fontsize=fs)
    ax.set_yticks(range(nq), labels[:nq], fontsize=fs)
    ax.set_xlabel(f"key {unit} (attended to)")
    ax.set_ylabel(f"query {unit} (attending)")
    ax.set_title(title, fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.046, label="attention weight")
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
    """

    def __init__(self, layer: int = -1, max_vectors: int = 60) -> None:
        self.layer, self.max_vectors = layer, max_vectors

    def write(self, ctx: ReportContext) -> list[Path]:
        backbone = ctx.model.backbone
        if not isinstance(backbone, AttentionWeights):
            log.info("no attention.png: %s has no attention weights to plot", type(backbone).__name__)
            return []
        batch, labels, unit, source = ctx.data.attention_example()
        weights, heads = attention_matrix(ctx.model, batch, self.layer, self.max_vectors)
        if weights.shape[1] == len(labels) + 1:  # the backbone prepended its CLS vector
            labels = ["CLS", *labels]
        n = len(labels)
        shown = "" if n <= self.max_vectors else f" (the first {self.max_vectors} of {n} {unit}s)"
        title = "\n".join(textwrap.wrap(f"block {self.layer} attention, mean over {heads} heads{shown}: each row "
                                        f"is a query {unit}, its weights over the {unit}s it attends to", 90)
                          + textwrap.wrap(source, 90, max_lines=2))
        fig = attention_heatmap(weights, labels, unit, title)
        return [ctx.save_figure(fig, "attention.png", dpi=110)]
