"""Molecules drawn with their atoms coloured by the pooling attention the model gives them
(``pool_attention.png``; RDKit's MolDraw2D; the weights are ``SequenceHead.last_pool_weights``).
The parity plot of a molecule task is the regression report (regression.py)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from vecset.backbone.abilities import pools_by_attention
from vecset.pipelines.reports.base import Report, ReportContext, plt
from vecset.pipelines.reports.outputs import inference, to_device


def pooling_weights(model, items: list[dict], collate) -> list[np.ndarray]:
    """Per molecule, the attention the pooling query gives each atom, (n_atoms,) (the head
    declares ``PoolingWeights``: its last forward's weights)."""
    with inference(model):
        model(to_device(collate(items), model.device))
        w = model.head.last_pool_weights.cpu()  # (B, N)
    return [w[i, : it["x"].shape[0]].numpy() for i, it in enumerate(items)]


def pooling_attention_image(model, items: list[dict], collate, size: int = 300):
    """A grid of molecules (a PIL image), atoms coloured by pooling attention relative to
    uniform (weight x number of atoms: white = 1, the mean-pooling weight; red above, blue
    below, saturated at 0 and 2)."""
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
    return grid


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
        return [ctx.save_image(pooling_attention_image(ctx.model, items, ctx.data.collate), "pool_attention.png")]
