"""scikit-learn's 8x8 digits (Alpaydin & Kaynak 1995, UCI optdigits), the default image job,
on the pinned split (``digits_split``). The shared loaders are ``images/data.py``'s ``ImageDataModule``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torchvision.transforms import v2

from vecset.pipelines.data.batch_augment import BatchAugment
from vecset.pipelines.data.options import DevicePlacement, as_group
from vecset.pipelines.images.data import (
    ImageDataModule,
    TensorImages,
    check_train_transforms,
    check_unit_range_transforms,
)


def digits_split(y: np.ndarray, seed: int = 0) -> dict[str, np.ndarray]:
    """The pinned split: 20% test (stratified, random_state=0), then 10% of the rest as
    validation (stratified, random_state=0). Returns indices into ``load_digits``."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(y))
    rest, test = train_test_split(idx, test_size=0.2, stratify=y, random_state=seed)
    train, val = train_test_split(rest, test_size=0.1, stratify=y[rest], random_state=seed)
    return {"train": train, "val": val, "test": test}


class DigitsDataModule(ImageDataModule):
    """scikit-learn's ``load_digits``: 1797 grey 8x8 images (values 0..16), 10 classes.

    The split is pinned (``digits_split``): 1293 train, 144 val, 360 test. Pixels are scaled
    to [-1, 1]. Training images get a small random affine (rotation, shift, scale;
    torchvision transforms v2), by default no flip: a mirrored digit is another glyph.

    Args:
        batch_size: images per batch.
        augment: apply the training transforms.
        train_transforms: torchvision v2 transforms for training images (``class_path`` /
            ``init_args`` in the YAML), run on the (1, 8, 8) float image in [-1, 1] (the
            background is -1); None: the random affine below.
        degrees, translate, scale: the default affine's ranges (``v2.RandomAffine``).
        num_workers: DataLoader workers (0: in the main process; the data is tiny).
        placement: ``on_device``: keep the splits on the training device and draw batches there
            (``device_loader.py``): ``auto`` when they fit in ``device_memory_share`` of its
            memory (a GPU's total, the host's RAM on the CPU) and no per-sample
            ``train_transforms`` run (``augment: false``), else the CPU loader; said in one log
            line at the start of a run (``DevicePlacement``).
        batch_augment: augmentations of whole batches, parameters per sample (``batch_augment.py``:
            ``RandomCrop``, ``HorizontalFlip``, ``RandomErasing``, ``MixUp``, ``CutMix``;
            ``class_path`` / ``init_args``): on the device with the data there, else on each
            batch of the CPU loader after the per-sample ``train_transforms`` (``augment: true``:
            e.g. RandAugment per image, then MixUp/CutMix per batch).
    """

    predictor = "vecset.pipelines.images.predictor.ImagePredictor"

    class_names = [str(d) for d in range(10)]
    class_count = 10
    image_shape = (1, 8, 8)
    background = -1.0  # pixels are stored in [-1, 1], the background -1

    def __init__(self, batch_size: int = 64, augment: bool = True,
                 train_transforms: list[v2.Transform] | None = None, degrees: float = 10.0,
                 translate: float = 0.1, scale: Sequence[float] = (0.9, 1.1), num_workers: int = 0,
                 placement: DevicePlacement = DevicePlacement(on_device="auto"),
                 batch_augment: list[BatchAugment] | None = None) -> None:
        placement = as_group(DevicePlacement, placement, "placement")
        super().__init__(batch_size, num_workers, placement.on_device, placement.device_memory_share, batch_augment,
                         augment)
        check_train_transforms(augment, train_transforms)
        check_unit_range_transforms(train_transforms or [], "DigitsDataModule's images are floats in [-1, 1] "
                                    "(the background -1)")
        self.augment = augment
        self.train_transforms = v2.Compose(list(train_transforms)) if train_transforms is not None else \
            v2.RandomAffine(degrees=degrees, translate=(translate, translate), scale=tuple(scale),
                            interpolation=v2.InterpolationMode.BILINEAR, fill=-1.0)
        self.index: dict[str, np.ndarray] = {}

    def setup(self, stage: str | None = None) -> None:
        if self.sets:
            return
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        images = torch.tensor(X, dtype=torch.float32).reshape(-1, 1, 8, 8) / 8.0 - 1.0  # 0..16 -> [-1, 1]
        labels = torch.tensor(y, dtype=torch.long)
        self.index = digits_split(y)
        for split, idx in self.index.items():
            t = torch.as_tensor(idx)
            tf = self.train_transforms if split == "train" and self.augment else None
            self.sets[split] = TensorImages(images[t], labels[t], t, tf)

    def describe(self, sample_id: int) -> str:
        return f"load_digits[{sample_id}]"


# -- image folders ---------------------------------------------------------------------
