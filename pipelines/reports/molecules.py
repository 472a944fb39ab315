"""Molecule plots: parity (predicted vs measured) and atoms coloured by pooling attention
(RDKit's MolDraw2D; the weights are ``SequenceHead.last_pool_weights``)."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402


def plot_parity(pred: np.ndarray, true: np.ndarray, names: list[str], out: Path) -> Path:
    """One panel per target: predicted vs measured, RMSE in the title."""
    pred, true = np.asarray(pred).reshape(len(pred), -1), np.asarray(true).reshape(len(true), -1)
    k = pred.shape[1]
    fig, axes = plt.subplots(1, k, figsize=(4.2 * k, 4), squeeze=False)
    for t, ax in enumerate(axes[0]):
        p, y = pred[:, t], true[:, t]
        rmse = float(np.sqrt(np.mean((p - y) ** 2)))
        lo, hi = float(min(p.min(), y.min())), float(max(p.max(), y.max()))
        ax.plot([lo, hi], [lo, hi], color="grey", lw=1)
        ax.scatter(y, p, s=12, alpha=0.7)
        ax.set_xlabel(f"measured {names[t]}")
        ax.set_ylabel(f"predicted {names[t]}")
        ax.set_title(f"{names[t]}: test RMSE {rmse:.3f} (n={len(y)})")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


@torch.no_grad()
def pooling_weights(model, items: list[dict], collate) -> list[np.ndarray]:
    """Per molecule, the attention the pooling query gives each atom, (n_atoms,)."""
    model.eval()
    batch = collate(items)
    batch = {k: v.to(model.device) if torch.is_tensor(v) else v for k, v in batch.items()}
    model(batch)
    w = model.head.last_pool_weights.cpu()  # (B, N)
    return [w[i, : it["x"].shape[0]].numpy() for i, it in enumerate(items)]


def plot_pooling_attention(model, items: list[dict], collate, out: Path, size: int = 300) -> Path:
    """A grid of molecules, atoms coloured by pooling attention relative to uniform
    (weight x number of atoms: white = 1, the mean-pooling weight; red above, blue below,
    saturated at 0 and 2)."""
    from PIL import Image
    from rdkit import Chem
    from rdkit.Chem.Draw import rdMolDraw2D

    weights = pooling_weights(model, items, collate)
    cmap = plt.get_cmap("coolwarm")
    tiles = []
    for it, w in zip(items, weights, strict=True):
        mol = Chem.MolFromSmiles(it["smiles"])
        rel = w * len(w)  # 1 = what mean pooling would give
        colours = {i: tuple(float(c) for c in cmap(float(np.clip(r / 2, 0, 1)))[:3]) for i, r in enumerate(rel)}
        drawer = rdMolDraw2D.MolDraw2DCairo(size, size)
        legend = f"{it['smiles'][:40]}  w x n: {rel.min():.3f}-{rel.max():.3f}"
        drawer.DrawMolecule(mol, highlightAtoms=list(colours), highlightAtomColors=colours,
                            highlightBonds=[], legend=legend)
        drawer.FinishDrawing()
        tiles.append(Image.open(io.BytesIO(drawer.GetDrawingText())).convert("RGB"))
    cols = min(3, len(tiles))
    rows = (len(tiles) + cols - 1) // cols
    grid = Image.new("RGB", (cols * size, rows * size), "white")
    for i, tile in enumerate(tiles):
        grid.paste(tile, ((i % cols) * size, (i // cols) * size))
    grid.save(out)
    return out
