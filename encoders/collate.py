"""Padding collation for variable-size sets."""

from __future__ import annotations

import torch
from torch import Tensor

PADDED = "padded"  # the batch key of VectorSet.padded: whether any set is shorter than the batch's N


def pad_sets(items: list[dict], pad_label: int = -100) -> dict:
    """Collate samples ``{"x": (n_i, F), "y": label(s), "id": int, ...}`` into a padded batch.

    ``y`` may be a scalar (one label per set), a (T,) float vector (regression targets) or a
    (n_i,) long tensor (one label per vector; padded with ``pad_label``).
    An empty set is an error: it has nothing to attend to.

    Returns ``{"x": (B, N, F), "mask": (B, N) bool, "y": ..., "ids": (B,) long, "padded": bool}``
    (``padded``: whether any set is shorter than N, known here from the lengths so that the
    model need not read the mask back from the device: ``VectorSet.padded``).
    """
    if not items:
        raise ValueError("cannot collate an empty batch")
    for it in items:
        if it["x"].dim() != 2:
            raise ValueError(f"sample id={it.get('id')} must be an (n, F) tensor of vectors, got shape "
                             f"{tuple(it['x'].shape)}")
        if it["x"].shape[0] == 0:
            raise ValueError(f"sample id={it.get('id')} is an empty set (shape {tuple(it['x'].shape)}); "
                             "every set needs at least one vector")
        if it["x"].shape[1] != items[0]["x"].shape[1]:
            raise ValueError(f"sample id={it.get('id')} has vectors of width {it['x'].shape[1]}, sample "
                             f"id={items[0].get('id')} of width {items[0]['x'].shape[1]}; a batch needs one width")
    B = len(items)
    N = max(it["x"].shape[0] for it in items)
    F = items[0]["x"].shape[1]
    x = torch.zeros(B, N, F, dtype=items[0]["x"].dtype)
    mask = torch.zeros(B, N, dtype=torch.bool)
    for i, it in enumerate(items):
        n = it["x"].shape[0]
        x[i, :n] = it["x"]
        mask[i, :n] = True
    batch = {"x": x, "mask": mask, "ids": torch.tensor([int(it["id"]) for it in items]),
             PADDED: is_padded(it["x"].shape[0] for it in items)}
    if "y" in items[0]:
        ys = [torch.as_tensor(it["y"]) for it in items]
        if ys[0].dim() == 1 and ys[0].dtype == torch.long:
            y = torch.full((B, N), pad_label, dtype=torch.long)
            for i, t in enumerate(ys):
                y[i, : len(t)] = t
            batch["y"] = y
        else:
            batch["y"] = torch.stack(ys)
    return batch


def is_padded(lengths) -> bool:
    """Whether a batch of sets with these lengths (ints) has padding: any shorter than the longest."""
    lengths = list(lengths)
    return min(lengths) < max(lengths)


def stack_field(items: list[dict], key: str) -> Tensor:
    return torch.stack([torch.as_tensor(it[key]) for it in items])
