"""Plots written into the run directory after fit."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def plot_curves(metrics_csv: Path, out: Path) -> Path | None:
    """Training loss and validation metrics per epoch, from the CSV logger's metrics.csv."""
    if not Path(metrics_csv).exists():
        return None
    df = pd.read_csv(metrics_csv)
    if "epoch" not in df:
        return None
    per_epoch = df.groupby("epoch").last()
    cols = [c for c in per_epoch.columns if c.startswith(("train_loss_epoch", "val_")) and per_epoch[c].notna().any()]
    if not cols:
        return None
    fig, axes = plt.subplots(1, len(cols), figsize=(4 * len(cols), 3.2), squeeze=False)
    for ax, c in zip(axes[0], cols, strict=True):
        s = per_epoch[c].dropna()
        ax.plot(s.index, s.values, marker="o", ms=3)
        ax.set_title(c)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def write_plots(trainer, model, datamodule, run_dir: Path) -> list[Path]:
    """Learning curves, plus whatever the DataModule draws (``datamodule.plots``)."""
    run_dir = Path(run_dir)
    paths = []
    csv = next((Path(lg.log_dir) / "metrics.csv" for lg in trainer.loggers if type(lg).__name__ == "CSVLogger"), None)
    if csv is not None and (p := plot_curves(csv, run_dir / "curves.png")):
        paths.append(p)
    if hasattr(datamodule, "plots"):
        paths += list(datamodule.plots(model, run_dir))
    return paths


def plot_alignment(weights, inputs: list[str], outputs: list[str], out: Path, title: str = "") -> Path:
    """Attention heatmap: rows = output tokens, columns = input tokens (weights (T, N))."""
    w = weights.detach().cpu().numpy() if hasattr(weights, "detach") else weights
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
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return Path(out)
