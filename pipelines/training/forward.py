"""``forward_task``: encoder -> backbone -> head, with the test-time flip; without Lightning, so
that a shipped predictor (``pipelines/predictor.py``) runs the same forward as the TaskModule
that trained it (``training/step.py``)."""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn


def forward_task(encoder: nn.Module, backbone: nn.Module, head: nn.Module, batch: dict,
                 test_time_flip: bool = False) -> Any:
    """encoder -> backbone -> head; the head gets the batch when it reads it (``needs_batch``:
    teacher forcing reads the targets, kernel regression the queries). With ``test_time_flip``,
    the mean of the head's outputs for the images and for their mirror images (``batch["image"]``
    flipped left-right), as airbench and timm's test-time augmentation do.

    Shapes:
        batch -> VectorSet (B, N, D) -> VectorSet (B, N, D) (N+1 with a CLS vector) -> the
        head's output; ``batch["features"]`` (B, F) where the data has set-level features;
        ``batch["image"]`` (B, C, H, W) with ``test_time_flip``.
    """
    vs = backbone(encoder(batch))
    out = head(vs, batch.get("features"), batch=batch if head.needs_batch else None)
    if not test_time_flip:
        return out
    if not isinstance(batch.get("image"), Tensor) or batch["image"].dim() != 4 or not isinstance(out, Tensor):
        raise ValueError("test_time_flip averages the outputs for images and their mirror images: it needs batches "
                         "with an 'image' tensor (B, C, H, W) and a head whose output is one tensor (a classifier's "
                         f"logits); this batch has {sorted(batch)} and the head {type(head).__name__} returns "
                         f"{type(out).__name__}")
    return (out + forward_task(encoder, backbone, head, {**batch, "image": batch["image"].flip(-1)})) / 2


__all__ = ["forward_task"]
