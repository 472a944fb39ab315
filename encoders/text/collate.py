"""Batching text: strings stay lists (the encoder tokenizes), labels are padded."""

from __future__ import annotations

import torch

from vecset.encoders.collate import is_padded


def collate_tokens(items: list[dict], pad_label: int = -100) -> dict:
    """``{"text": [B token lists], "y": (B, N) long padded with pad_label, "mask", "ids", "padded"}``
    (``padded``: whether any sentence is shorter than N, ``VectorSet.padded``)."""
    B, N = len(items), max(len(it["forms"]) for it in items)
    y = torch.full((B, N), pad_label, dtype=torch.long)
    mask = torch.zeros(B, N, dtype=torch.bool)
    for i, it in enumerate(items):
        n = len(it["forms"])
        mask[i, :n] = True
        if "tags" in it:
            y[i, :n] = torch.tensor(it["tags"])
    return {"text": [it["forms"] for it in items], "y": y, "mask": mask,
            "ids": torch.tensor([it["id"] for it in items]), "padded": is_padded(len(it["forms"]) for it in items)}


def collate_text(items: list[dict]) -> dict:
    """Text samples -> ``{"text": [B str], "target": [B str], "references": [B lists], "ids"}``."""
    batch = {"text": [it["text"] for it in items], "ids": torch.tensor([it["id"] for it in items])}
    if "target" in items[0]:
        batch["target"] = [it["target"] for it in items]
        batch["references"] = [it["references"] for it in items]
    return batch
