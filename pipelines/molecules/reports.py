"""Molecules drawn with the pooling attention the model gives their atoms (``pool_attention.png``):
RDKit's 2-D depiction over a similarity map of the atoms' weights (a Gaussian at each atom,
as ``rdkit.Chem.Draw.SimilarityMaps`` draws them, coloured relative to uniform), each atom's
weight written beside it and a colour bar in attention weight per molecule. The weights are
``SequenceHead.last_pool_weights``: the head's one pooling query, so there are no heads to
choose. The parity plot of a molecule task is the regression report (regression.py)."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import numpy as np

from vecset.contracts.abilities import pools_by_attention
from vecset.pipelines.reports.attention_heads import UNIT
from vecset.pipelines.reports.base import Report, ReportContext, plt
from vecset.pipelines.reports.outputs import inference, to_model

CMAP = "RdBu_r"  # blue: below uniform, white: uniform, red: above


def pooling_weights(model, items: list[dict], collate) -> list[np.ndarray]:
    """Per molecule, the attention the pooling query gives each atom, (n_atoms,) (the head
    declares ``PoolingWeights``: its last forward's weights)."""
    with inference(model):
        model(to_model(collate(items), model))
        w = model.head.last_pool_weights.float().cpu()  # (B, N)
    return [w[i, : it["x"].shape[0]].numpy() for i, it in enumerate(items)]


def molecule_tile(smiles: str, w: np.ndarray, size: int = 320) -> tuple[np.ndarray, np.ndarray]:
    """RDKit's 2-D depiction of one molecule, (size, size, 4) RGBA on a transparent background,
    each atom's weight written beside it; and beneath it the weights as a similarity map,
    (size, size) in attention weight: 1/n (uniform) plus a Gaussian at each atom of height its
    weight minus 1/n (sigma 0.3 bond lengths, as ``rdkit.Chem.Draw.SimilarityMaps``), so the
    map at an atom reads its weight.

    The map is computed here, not by ``SimilarityMaps.GetSimilarityMapFromWeights``: with a
    MolDraw2D its fill is scaled to the grid's own range (its ``scale`` is not used there), so
    its colours could not be read on a colour bar.
    """
    from PIL import Image
    from rdkit import Chem
    from rdkit.Chem.Draw import rdMolDraw2D

    mol = Chem.MolFromSmiles(smiles)
    n = len(w)
    for i, a in enumerate(mol.GetAtoms()):
        a.SetProp("atomNote", f"{w[i]:.3f}")
    drawer = rdMolDraw2D.MolDraw2DCairo(size, size)
    drawer.drawOptions().setBackgroundColour((1, 1, 1, 0))  # the map shows through
    drawer.DrawMolecule(mol)
    drawer.FinishDrawing()
    tile = np.asarray(Image.open(io.BytesIO(drawer.GetDrawingText())).convert("RGBA"))
    xy = np.array([[p.x, p.y] for p in (drawer.GetDrawCoords(i) for i in range(n))])  # (n, 2) pixels
    bonds = [np.linalg.norm(xy[b.GetBeginAtomIdx()] - xy[b.GetEndAtomIdx()]) for b in mol.GetBonds()]
    sigma = 0.3 * (float(np.median(bonds)) if bonds else size / 8)
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    d2 = (xx[None] - xy[:, 0, None, None]) ** 2 + (yy[None] - xy[:, 1, None, None]) ** 2  # (n, size, size)
    field = 1 / n + np.tensordot(w - 1 / n, np.exp(-d2 / (2 * sigma**2)), axes=1)  # (size, size)
    return tile, field


def pooling_attention_figure(model, items: list[dict], collate, size: int = 320):
    """A grid of molecules, each drawn by RDKit over the similarity map of the pooling query's
    weights on its atoms (``molecule_tile``), with its own colour bar in attention weight
    (white: uniform, 1/atoms)."""
    from matplotlib.colors import TwoSlopeNorm

    weights = pooling_weights(model, items, collate)
    cols = min(3, len(items))
    rows = (len(items) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.9 * cols, 3.7 * rows), squeeze=False, layout="constrained")
    for ax in axes.ravel():
        ax.axis("off")
    for ax, it, w in zip(axes.ravel(), items, weights, strict=False):
        tile, field = molecule_tile(it["smiles"], w, size)
        n = len(w)
        # white at uniform, blue down to 0, red up to the top weight (at least 1.25 x uniform: a
        # near-uniform molecule stays near white, not a saturated map of noise)
        top = max(float(w.max()), 1.25 / n) if n > 1 else 1.25
        im = ax.imshow(field, cmap=CMAP, norm=TwoSlopeNorm(1 / n, 0.0, top))
        ax.imshow(tile)
        bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.02, label=UNIT)
        bar.ax.axhline(1 / n, color="k", lw=0.8)
        smiles = it["smiles"] if len(it["smiles"]) <= 36 else it["smiles"][:33] + "..."
        ax.set_title(f"{smiles}\n{n} atoms, uniform 1/{n} = {1 / n:.3f} (line on the bar)", fontsize=8)
    fig.suptitle("\n".join(textwrap.wrap("query: the head's pooling query (one query, one head); red atoms get "
                                         "more weight than uniform, blue less; numbers: each atom's weight",
                                         40 * cols + 20)), fontsize=9)
    return fig


class PoolingAttentionReport(Report):
    """``pool_attention.png``: the first ``molecules`` test molecules, when the head pools by
    attention (other poolings have no per-atom weights).

    Args:
        molecules: how many test molecules to draw.
    """

    def __init__(self, molecules: int = 6) -> None:
        self.molecules = molecules

    def write(self, ctx: ReportContext) -> list[Path]:
        items = ctx.test_items(self.molecules)
        if not pools_by_attention(ctx.model.head) or not items:
            return []
        fig = pooling_attention_figure(ctx.model, items, ctx.data.collate)
        return [ctx.save_figure(fig, "pool_attention.png", dpi=100)]
