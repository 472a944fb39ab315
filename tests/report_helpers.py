"""What the report tests share: a report they load through a config's ``ReportWriter``
(``class_path``), and a tiny image data module."""

from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.data import DataLoader

from vecset.encoders.image import collate_images
from vecset.pipelines import VecsetDataModule
from vecset.pipelines.reports.base import Report, ReportContext

N, BATCH = 20, 8  # 3 test batches


class Broken(Report):
    """A report that always fails, as a report with a bug would."""

    def write(self, ctx: ReportContext) -> list[Path]:
        raise RuntimeError("mat1 and mat2 must have the same dtype")


class TinyImages(VecsetDataModule):
    """20 random 1x4x4 images; two classes, or a regression target (the mean pixel)."""

    def __init__(self, regression: bool = False) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        x = torch.randn(N, 1, 4, 4, generator=g)
        y = x.mean((1, 2, 3)) if regression else (x.mean((1, 2, 3)) > 0).long()
        self.items = [{"image": x[i], "y": y[i], "id": i} for i in range(N)]
        self.class_names, self.target_names = (None, ["mean"]) if regression else (["dark", "light"], None)

    collate = staticmethod(collate_images)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.items, batch_size=BATCH, collate_fn=self.collate)

    def test_items(self) -> list[dict]:
        return self.items

    def display_image(self, image: torch.Tensor):
        return image[0].numpy()
