"""Batching graphs: pad node features, distances, bond types and labels to the largest graph in the batch."""

from __future__ import annotations

import torch

from vecset.encoders.collate import is_padded


def pad_graphs(items: list[dict], unreachable: int, pad_label: int = -100) -> dict:
    """Collate cached graph tensors into a padded batch.

    Each item holds ``graph_tensors`` output plus ``"id"`` and optionally ``"y"`` (a (T,)
    float vector per graph, or a (n,) long label per node) and ``"features"`` (F,).

    Returns ``x`` (B, N, F), ``mask`` (B, N) bool, ``dist`` (B, N, N) long (padding =
    ``unreachable``), ``edge`` (B, N, N), ``degree`` (B, N), ``lap`` (B, N, k), ``ids`` (B,),
    ``y``, ``features`` (B, F), and ``dist3d`` (B, N, N) float when the items have 3-D distances
    (padding = -1, no distance), ``physics`` (B, P) when they have the molecule token's values.
    """
    if not items:
        raise ValueError("cannot collate an empty batch")
    B = len(items)
    N = max(it["x"].shape[0] for it in items)
    F = items[0]["x"].shape[1]
    batch = {
        "x": torch.zeros(B, N, F),
        "mask": torch.zeros(B, N, dtype=torch.bool),
        "dist": torch.full((B, N, N), unreachable, dtype=torch.long),
        "edge": torch.zeros(B, N, N, dtype=torch.long),
        "degree": torch.zeros(B, N, dtype=torch.long),
        "ids": torch.tensor([int(it["id"]) for it in items]),
        "padded": is_padded(it["x"].shape[0] for it in items),  # VectorSet.padded, known here
    }
    has_lap = "lap" in items[0]
    if has_lap:
        batch["lap"] = torch.zeros(B, N, items[0]["lap"].shape[1])
    has_3d = "dist3d" in items[0]
    if has_3d:
        batch["dist3d"] = torch.full((B, N, N), -1.0)  # geometry.NO_DISTANCE
    for i, it in enumerate(items):
        n = it["x"].shape[0]
        batch["x"][i, :n] = it["x"]
        batch["mask"][i, :n] = True
        batch["dist"][i, :n, :n] = it["dist"]
        batch["edge"][i, :n, :n] = it["edge"]
        batch["degree"][i, :n] = it["degree"]
        if has_lap:
            batch["lap"][i, :n] = it["lap"]
        if has_3d:
            batch["dist3d"][i, :n, :n] = it["dist3d"]
    if "y" in items[0]:
        ys = [torch.as_tensor(it["y"]) for it in items]
        if ys[0].dtype == torch.long and ys[0].dim() == 0:  # one label per graph
            batch["y"] = torch.stack(ys)
        elif ys[0].dtype == torch.long:  # one label per node
            y = torch.full((B, N), pad_label, dtype=torch.long)
            for i, t in enumerate(ys):
                y[i, : len(t)] = t
            batch["y"] = y
        else:
            batch["y"] = torch.stack(ys).float()
    if "features" in items[0]:
        batch["features"] = torch.stack([torch.as_tensor(it["features"]) for it in items]).float()
    if "physics" in items[0]:
        batch["physics"] = torch.stack([it["physics"] for it in items]).float()
    return batch
