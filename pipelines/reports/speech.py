"""Speech plots: log-mel spectrogram with true and predicted phone segments beneath it, and one
layer's attention map over the frames."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from vecset.pipelines.data.collate import pad_sets  # noqa: E402


def runs(labels: np.ndarray) -> list[tuple[int, int, int]]:
    """(start_frame, end_frame, label) for each run of equal labels."""
    out, s = [], 0
    for t in range(1, len(labels) + 1):
        if t == len(labels) or labels[t] != labels[t - 1]:
            out.append((s, t, int(labels[t - 1])))
            s = t
    return out


def _segment_row(ax, labels: np.ndarray, names: list[str], title: str, truth: np.ndarray | None = None) -> None:
    cmap = plt.get_cmap("tab20")
    for s, e, lab in runs(labels):
        wrong = truth is not None and bool((truth[s:e] != lab).any())
        ax.axvspan(s, e, color=cmap(lab % 20), alpha=0.55 if not wrong else 0.25, lw=0)
        ax.axvline(s, color="k", lw=0.4)
        if e - s >= 3 and lab >= 0:
            ax.text((s + e) / 2, 0.5, names[lab], ha="center", va="center", fontsize=6,
                    color="red" if wrong else "black")
    ax.set_yticks([])
    ax.set_ylabel(title, rotation=0, ha="right", va="center", fontsize=8)
    ax.set_xlim(0, len(labels))


def plot_segments(dm, outputs, out: Path) -> Path:
    """For each (id, predicted, true): log-mel frames, then true and predicted segments."""
    names = dm.class_names
    items = {it["id"]: it for it in dm.sets["test"].items}
    fig, axes = plt.subplots(4 * len(outputs), 1, figsize=(14, 3.0 * len(outputs)),
                             gridspec_kw={"height_ratios": [4, 0.7, 0.7, 1.4] * len(outputs), "hspace": 0.05},
                             squeeze=False)
    axes = axes[:, 0]
    for k, (sid, pred, true) in enumerate(outputs):
        feats = items[sid]["x"].numpy()  # (T, F) log-mel energies
        a0, a1, a2, gap = axes[4 * k: 4 * k + 4]
        gap.axis("off")
        a0.imshow(feats.T, origin="lower", aspect="auto", cmap="magma", interpolation="nearest")
        acc = float((pred == true)[true >= 0].mean()) if (true >= 0).any() else float("nan")
        a0.set_title(f"{dm.describe(sid)}  (frame accuracy {acc:.3f})", fontsize=9)
        a0.set_ylabel("mel bin")
        a0.set_xticks([])
        a0.set_xlim(-0.5, len(true) - 0.5)
        _segment_row(a1, true, names, "true")
        a1.set_xticks([])
        _segment_row(a2, pred, names, "predicted", truth=true)
        a2.set_xlabel("frame (10 ms); red text: a segment with wrong frames", fontsize=8)
    fig.subplots_adjust(left=0.06, right=0.99, top=0.97, bottom=0.03)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


@torch.no_grad()
def plot_attention(dm, model, sample_id: int, out: Path, layer: int = -1, max_frames: int = 300) -> Path:
    """Attention weights (mean over heads) of one layer for one test utterance."""
    item = next(it for it in dm.sets["test"].items if it["id"] == sample_id)
    batch = pad_sets([{"x": item["x"], "id": sample_id}])
    dev = next(model.parameters()).device
    batch = {k: v.to(dev) for k, v in batch.items()}
    was = model.training
    model.eval()
    vs = model.encoder(batch)
    # only the plotted queries are expanded: a windowed layer keeps its band, not T x T
    w = model.backbone.attention_weights(vs, layer=layer, queries=max_frames)  # (1, H, min(T, max_frames), T)
    model.train(was)
    a = w[0].mean(0).cpu().numpy()[:, :max_frames]
    fig, ax = plt.subplots(figsize=(6, 5.5))
    im = ax.imshow(a, cmap="viridis", origin="upper", interpolation="nearest")
    # the encoder's window overrides the backbone's (as in Backbone.forward)
    win = vs.window if vs.window is not None else getattr(model.backbone.blocks[layer].attn, "window", None)
    ax.set_title(f"layer {layer} attention, mean over heads (window={win})\n{dm.describe(sample_id)}", fontsize=8)
    ax.set_xlabel("key frame")
    ax.set_ylabel("query frame")
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
