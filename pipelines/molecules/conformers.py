"""A random conformer each time a training molecule is drawn (Uni-Mol, Zhou et al. 2023: several
conformers per molecule as augmentation), conformer 0 everywhere else.

A molecule featurized with ``conformers`` k > 1 (``encoders/graph/geometry.py``) holds every
embedded conformer's distances, ``conformers3d`` (C, N, N), and conformer 0's as ``dist3d``, which
validation, test, predict and reports read. Training batches replace ``dist3d`` with one of the C
at random, drawn anew at every draw:

- the classic DataLoader: ``ConformerDraw`` wraps the training items and draws with torch's
  global generator (``seed_everything`` seeds it; DataLoader workers get their own seeds from it),
  so a seeded run draws the same conformers;
- molecules on the device: ``pick_conformers``, a batch transform of the gather loader, draws with
  its generator on the device, seeded by (seed, epoch, batch, rank) (``data/device_loader.py``'s
  ``batch_seed``): the same draws after a mid-epoch resume.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.utils.data import Dataset


class ConformerDraw(Dataset):
    """Training items whose ``dist3d`` is a random one of their ``conformers3d`` at each draw.

    Args:
        items: featurized molecules with ``conformers3d`` (C, N, N), C >= 1 per molecule.

    An item comes back as a shallow copy (the stored item keeps conformer 0) with ``dist3d`` (N, N)
    set and without ``conformers3d`` (``pad_graphs`` batches what it knows).
    """

    def __init__(self, items: Sequence[dict]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        item = dict(self.items[i])
        stack = item.pop("conformers3d")  # (C, N, N)
        item["dist3d"] = stack[int(torch.randint(stack.shape[0], ()))]
        return item


def pick_conformers(batch: dict, g: torch.Generator) -> dict:
    """A gathered training batch's ``conformers3d`` (B, C, N, N; C the split's most) and
    ``conformer_count`` (B,) -> ``dist3d`` (B, N, N), row b's conformer drawn uniformly from its
    first ``conformer_count[b]``, with ``g`` (on the batch's device: nothing is read back)."""
    stack, count = batch.pop("conformers3d"), batch.pop("conformer_count")
    B = count.shape[0]
    pick = (torch.rand(B, generator=g, device=count.device) * count).long()  # (B,) in [0, count)
    pick = torch.minimum(pick, count - 1)  # float rounding must never reach count
    batch["dist3d"] = stack[torch.arange(B, device=count.device), pick]  # (B, N, N)
    return batch


__all__ = ["ConformerDraw", "pick_conformers"]
