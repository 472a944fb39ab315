"""Image files as a dataset: each file read at its depth and converted to the channels asked for
(``read_image``), then transformed, with its label and id; the first few read and batched in one
call (``first_batch``: what the reports show)."""

from __future__ import annotations

from pathlib import Path

from torch.utils.data import Dataset

from vecset.encoders.image.collate import collate_images
from vecset.encoders.image.reading import read_image


class FileImages(Dataset):
    """Image files with labels (None: files to predict); reads each with ``read_image``
    (converting it to ``channels``), then ``transform`` (torchvision v2: resizing, augmentation,
    scaling, normalization).

    Shapes:
        item ``{"image": (C, H, W) float after transform, "id": int, "y": int}`` (no ``y`` without labels).
    """

    def __init__(self, paths: list[Path], labels: list[int] | None, ids: list[int], channels: int,
                 transform) -> None:
        self.paths, self.labels, self.ids, self.channels, self.transform = paths, labels, ids, channels, transform

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> dict:
        item = {"image": self.transform(read_image(self.paths[i], self.channels)), "id": self.ids[i]}
        if self.labels is not None:
            item["y"] = self.labels[i]
        return item

    def first_batch(self, n: int) -> dict | None:
        """The first ``n`` images (all of them when there are fewer) read and batched
        (``collate_images``), None for none: the few images a report shows, in one call."""
        items = [self[i] for i in range(min(n, len(self)))]
        return collate_images(items) if items else None
