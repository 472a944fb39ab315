"""CIFAR-10 (Krizhevsky 2009) from a local folder in torchvision's layout, never downloading."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torchvision.transforms import v2

from vecset.pipelines.data.batch_augment import BatchAugment
from vecset.pipelines.data.device_loader import ScaleNormalize
from vecset.pipelines.data.options import DevicePlacement, as_group
from vecset.pipelines.images.data import (
    ImageDataModule,
    TensorImages,
    check_train_transforms,
)


class Cifar10DataModule(ImageDataModule):
    """CIFAR-10 from a folder the user already has (torchvision's ``CIFAR10`` layout:
    ``root/cifar-10-batches-py/``); never downloads. A missing folder is an error naming
    where it looked.

    The official test set is the test split; ``val_fraction`` of the official training
    set (stratified, ``split_seed``) is the validation split. Pixels are normalized with
    CIFAR-10's channel means/stds; training images get a random crop (padding 4) and a
    horizontal flip.

    Args:
        root: the folder holding ``cifar-10-batches-py``.
        val_fraction, split_seed: the validation split.
        augment: apply the training transforms.
        train_transforms: torchvision v2 transforms for training images (``class_path`` /
            ``init_args``), run on the (3, 32, 32) uint8 image before scaling; None: a random
            crop of 32 after 4 pixels of padding and a horizontal flip.
        batch_size, num_workers, placement, batch_augment: as in DigitsDataModule.
    """

    image_shape = (3, 32, 32)
    class_count = 10
    MEAN = (0.4914, 0.4822, 0.4465)
    STD = (0.2470, 0.2435, 0.2616)

    def __init__(self, root: str, val_fraction: float = 0.1, split_seed: int = 0, augment: bool = True,
                 train_transforms: list[v2.Transform] | None = None, batch_size: int = 128,
                 num_workers: int = 0, placement: DevicePlacement = DevicePlacement(on_device="auto"),
                 batch_augment: list[BatchAugment] | None = None) -> None:
        placement = as_group(DevicePlacement, placement, "placement")
        super().__init__(batch_size, num_workers, placement.on_device, placement.device_memory_share, batch_augment,
                         augment)
        check_train_transforms(augment, train_transforms)
        self.root, self.val_fraction, self.split_seed, self.augment = Path(root), val_fraction, split_seed, augment
        self.train_transforms = list(train_transforms) if train_transforms is not None else [
            v2.RandomCrop(32, padding=4), v2.RandomHorizontalFlip()]
        self.class_names = None
        self.offsets: dict[str, int] = {}

    def _check_root(self) -> Path:
        folder = self.root / "cifar-10-batches-py"
        if not folder.is_dir():
            raise FileNotFoundError(
                f"CIFAR-10 not found: looked for {folder.resolve()} (torchvision's layout, the folder "
                "cifar-10-batches-py from cifar-10-python.tar.gz). vecset never downloads; unpack it there "
                "or set data.init_args.root"
            )
        return folder

    def prepare_data(self) -> None:
        self._check_root()

    def setup(self, stage: str | None = None) -> None:
        if self.sets:
            return
        from sklearn.model_selection import train_test_split
        from torchvision.datasets import CIFAR10

        folder = self._check_root()
        try:
            full_train = CIFAR10(str(self.root), train=True, download=False)
            test = CIFAR10(str(self.root), train=False, download=False)
        except RuntimeError as e:
            raise ValueError(f"{folder}: CIFAR-10 files are missing or corrupt ({e}); expected "
                             "data_batch_1..5, test_batch and batches.meta from cifar-10-python.tar.gz") from e
        self.class_names = list(full_train.classes)
        norm = [v2.ToDtype(torch.float32, scale=True), v2.Normalize(self.MEAN, self.STD)]
        train_tf = v2.Compose([*self.train_transforms, *norm]) if self.augment else v2.Compose(norm)
        eval_tf = v2.Compose(norm)

        def as_tensor(ds) -> Tensor:
            return torch.from_numpy(ds.data).permute(0, 3, 1, 2).contiguous()  # (N, 3, 32, 32) uint8

        xtr, ytr = as_tensor(full_train), torch.tensor(full_train.targets)
        idx = np.arange(len(ytr))
        tr, va = train_test_split(idx, test_size=self.val_fraction, stratify=ytr.numpy(), random_state=self.split_seed)
        tr, va = torch.as_tensor(tr), torch.as_tensor(va)
        # ids: 0..49999 official training images, 50000.. official test images
        self.offsets = {"train": 0, "test": len(ytr)}
        self.sets["train"] = TensorImages(xtr[tr], ytr[tr], tr, train_tf)
        self.sets["val"] = TensorImages(xtr[va], ytr[va], va, eval_tf)
        self.sets["test"] = TensorImages(as_tensor(test), torch.tensor(test.targets),
                                         torch.arange(len(test.targets)) + len(ytr), eval_tf)

    def prepare_batch(self) -> ScaleNormalize:
        return ScaleNormalize(255.0, self.MEAN, self.STD)

    def describe(self, sample_id: int) -> str:
        n = self.offsets.get("test", 50000)
        return f"cifar10-train[{sample_id}]" if sample_id < n else f"cifar10-test[{sample_id - n}]"
