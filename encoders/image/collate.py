"""Batching images: stacked (B, C, H, W) with labels and ids."""

from __future__ import annotations

import torch


def collate_images(items: list[dict]) -> dict:
    """Stack same-size images: ``{"image": (B,C,H,W), "y": (B,), "ids": (B,)}``."""
    if not items:
        raise ValueError("cannot collate an empty batch")
    shapes = {tuple(it["image"].shape) for it in items}
    if len(shapes) > 1:
        raise ValueError(f"images of one batch must share a size, got {sorted(shapes)} "
                         f"(ids {[it['id'] for it in items]}); set image_size to resize them")
    batch = {"image": torch.stack([it["image"] for it in items]),
             "ids": torch.tensor([int(it["id"]) for it in items])}
    if "y" in items[0]:
        batch["y"] = torch.tensor([int(it["y"]) for it in items])
    return batch
