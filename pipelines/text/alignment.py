"""Alignment heatmaps of a sequence-to-sequence task (G2P): for a few test inputs, the
decoder's cross-attention over the input tokens for each output token it decoded
(``alignment_<k>_<input>.png``; the weights are ``Seq2SeqHead.predict``'s ``alignment``)."""

from __future__ import annotations

import re
from pathlib import Path

from torch import Tensor

from vecset.pipelines.reports.base import Report, ReportContext, plt
from vecset.pipelines.reports.outputs import inference, to_model


def alignment_figure(weights, inputs: list[str], outputs: list[str], title: str = ""):
    """Attention heatmap: rows = output tokens, columns = input tokens (weights (T, N))."""
    w = weights.detach().float().cpu().numpy() if isinstance(weights, Tensor) else weights
    fig, ax = plt.subplots(figsize=(0.5 * max(len(inputs), 4) + 1.5, 0.4 * max(len(outputs), 4) + 1.2))
    im = ax.imshow(w, cmap="viridis", aspect="auto", vmin=0)
    ax.set_xticks(range(len(inputs)), inputs)
    ax.set_yticks(range(len(outputs)), outputs)
    ax.set_xlabel("input")
    ax.set_ylabel("output")
    if title:
        ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


class AlignmentReport(Report):
    """``alignment_<k>_<word>.png`` for the first ``words`` test items (``text`` in,
    ``target`` the reference shown in the title).

    Args:
        words: how many test items to draw (0: none).
    """

    def __init__(self, words: int = 4) -> None:
        self.words = words

    def write(self, ctx: ReportContext) -> list[Path]:
        items = ctx.test_items(self.words)
        if not items:
            return []
        model = ctx.model
        with inference(model):
            batch = to_model(ctx.data.collate(items), model)
            pred = model.head.predict(model(batch), batch)
        paths = []
        for k, it in enumerate(items):
            safe = re.sub(r"[^A-Za-z0-9_-]", "_", it["text"])
            title = f"{it['text']}: {' '.join(pred['tokens'][k])}  (ref {it['target']})"
            out_labels = pred["tokens"][k] + (["<eos>"] if pred["finished"][k] else [])
            fig = alignment_figure(pred["alignment"][k], list(it["text"]), out_labels, title)
            paths.append(ctx.save_figure(fig, f"alignment_{k}_{safe}.png", dpi=100))
        return paths
