"""What the image classification DataModules share (``ImageDataModule``: loaders, prediction
naming, test items): scikit-learn's 8x8 digits (``digits.py``, the default job), the user's own
image folders (``folder.py``, torchvision ImageFolder layout), CIFAR-10 from a local folder
(``cifar10.py``) and Fashion-MNIST (``fashion_mnist.py``) build on it.

Every batch is ``{"image": (B, C, H, W) float, "y": (B,) long, "ids": (B,) long}``; the
pixel/patch encoders in ``encoders/image/`` turn the image into a VectorSet. What an image
file's format means (modes, bit depths, channels, the errors naming a file) is
``encoders/image/reading.py``'s; these modules find the files, split, and batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from pytorch_lightning.utilities import rank_zero_info
from torch import Tensor
from torch.utils.data import DataLoader, Dataset
from torchvision.transforms import v2

from vecset.encoders.image import IMAGE_EXTENSIONS, FileImages, check_images, collate_images
from vecset.pipelines.data.base import ModelLink, VecsetDataModule, fixed
from vecset.pipelines.data.batch_augment import BatchAugment, ImageAugment, check_batch_augment
from vecset.pipelines.data.device_loader import (
    DeviceLoader,
    DeviceSampler,
    ScaleNormalize,
    check_finite,
    eval_order,
    fmt_bytes,
    memory_share,
    resident_bytes,
    share_that_fits,
)


class TensorImages(Dataset):
    """In-memory images (N, C, H, W) with labels; ``transform`` runs per sample."""

    def __init__(self, images: Tensor, labels: Tensor, ids: Tensor, transform=None) -> None:
        self.images, self.labels, self.ids, self.transform = images, labels, ids, transform

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> dict:
        img = self.images[i]
        if self.transform is not None:
            img = self.transform(img)
        return {"image": img, "y": int(self.labels[i]), "id": int(self.ids[i])}


class AugmentedCollate:
    """The CPU loader's collate, then ``batch_augment`` on the collated batch (MixUp and CutMix
    need a batch), each batch with a ``torch.Generator`` seeded from the global RNG: a seeded
    run draws the same, and DataLoader workers (seeded apart by PyTorch) draw apart."""

    def __init__(self, collate, augments: Sequence[BatchAugment]) -> None:
        self.collate, self.augments = collate, list(augments)

    def __call__(self, items: list[dict]) -> dict:
        batch = self.collate(items)
        g = torch.Generator().manual_seed(int(torch.randint(2**62, ())))
        for a in self.augments:
            batch = a(batch, g)
        return batch


# torchvision's policies of photo operations (colour, contrast, solarize, posterize): they take
# uint8 images or floats in [0, 1] and clamp a float image to [0, 1]
AUTO_AUGMENTS = (v2.AutoAugment, v2.RandAugment, v2.TrivialAugmentWide, v2.AugMix)


def check_unit_range_transforms(transforms: Sequence, where: str) -> None:
    """Refuse ``AUTO_AUGMENTS`` on images stored as floats outside [0, 1] (``where`` says which):
    they would clamp the negative pixels away without a word."""
    for t in transforms:
        if isinstance(t, AUTO_AUGMENTS):
            raise ValueError(f"train_transforms: {type(t).__name__} needs uint8 images or floats in [0, 1], but "
                             f"{where}; it would clamp them to [0, 1]. Use geometric transforms (RandomAffine, "
                             "RandomCrop) or RandomErasing here, or the policy on data stored as uint8 "
                             "(FashionMNISTDataModule, ImageFolderDataModule, Cifar10DataModule)")


def check_train_transforms(augment: bool, train_transforms: Sequence | None) -> None:
    """``augment`` switches the training transforms on, ``train_transforms`` says which (None:
    the data module's default list); a list given with ``augment: false`` would be ignored."""
    if train_transforms is not None and not augment:
        raise ValueError("train_transforms is set but augment is false, so they would not be applied: "
                         "set augment: true to use them (or drop train_transforms)")


def list_predict_files(files: Sequence[str]) -> list[Path]:
    """The image files ``vecset predict`` reads: each file as given, each folder as the image
    files under it (sorted, hidden files skipped). A missing path, a file without an image
    extension, one PIL cannot read (``check_image``), or a folder without images is an error
    naming it."""
    found: list[Path] = []
    for f in files:
        p = Path(f)
        if p.is_dir():
            inside = sorted(q for q in p.rglob("*") if q.is_file() and not q.name.startswith(".")
                            and q.suffix.lower() in IMAGE_EXTENSIONS)
            if not inside:
                raise ValueError(f"predict folder {p} holds no image files (expected one of {', '.join(IMAGE_EXTENSIONS)})")
            found += inside
        elif p.is_file():
            if p.suffix.lower() not in IMAGE_EXTENSIONS:
                raise ValueError(f"{p}: not an image file (extension {p.suffix or 'none'!r}; expected one of "
                                 f"{', '.join(IMAGE_EXTENSIONS)})")
            found.append(p)
        else:
            raise FileNotFoundError(f"predict file {p} does not exist")
    check_images(found)  # any mode: predict files are converted to the model's channels
    return found


class ImageDataModule(VecsetDataModule):
    """Shared loaders, prediction naming and test items of the image DataModules.

    Subclasses fill ``self.sets`` ({"train", "val", "test"} -> Dataset), ``class_names`` and
    ``image_shape`` (the (C, H, W) of every image a batch holds: the model checks at setup that
    its attention can hold the set an image makes) in ``setup`` and implement ``describe``.
    Those that read image files for ``vecset predict`` (``predict_files``) add them with
    ``add_predict_files``; ``predict`` then reads that split instead of the test split.
    """

    image_shape: tuple[int, int, int] | None = None
    # the class count of a data set that fixes its classes (None: read at setup), which the
    # head's num_outputs follows, as the encoder's in_channels follows image_shape's channels
    class_count: int | None = None
    predict_files: list[str] | None = None
    # the raw pixel value that a crop's padding shows (before prepare_batch's scaling)
    background: float = 0.0
    # the batch_augment transforms it takes: its batches are images
    batch_augment_kind = ImageAugment

    @classmethod
    def model_links(cls) -> list[ModelLink]:
        """The images' channels (``image_shape``) are the encoder's ``in_channels``, the class
        count the head's ``num_outputs``: the data set fixes both."""
        links = []
        if cls.image_shape is not None:
            c = cls.image_shape[0]
            links.append(fixed("image channels", "encoder", "in_channels", c, f"{c}-channel images"))
        if cls.class_count is not None:
            links.append(fixed("class count", "head", "num_outputs", cls.class_count, f"{cls.class_count} classes"))
        return links

    def __init__(self, batch_size: int, num_workers: int, on_device: bool | Literal["auto"] = "auto",
                 device_memory_share: float = 0.5, batch_augment: list[BatchAugment] | None = None,
                 augment: bool = False) -> None:
        super().__init__()
        self.batch_size, self.num_workers = batch_size, num_workers
        if on_device not in (True, False, "auto"):
            raise ValueError(f"on_device must be true, false or auto, got {on_device!r}")
        if not 0 < device_memory_share <= 1:
            raise ValueError(f"device_memory_share must be in (0, 1], got {device_memory_share}")
        self.batch_augment = list(batch_augment or [])
        check_batch_augment(type(self).__name__, self.batch_augment_kind, self.batch_augment)
        # batch_augment runs where the batches are: on the device with the data there, else on each
        # batch of the CPU loader after its per-sample train_transforms (RandAugment then MixUp)
        if on_device is True and augment:
            raise ValueError("on_device: true with augment: true: train_transforms run per sample on the CPU; set "
                             "augment: false and list batch_augment instead, or set on_device: auto or false")
        self.on_device, self.device_memory_share = on_device, device_memory_share
        self.sets: dict[str, Dataset] = {}
        self.predict_paths: list[Path] = []
        self.predict_offset = 0
        self._resident: dict[str, dict[str, Tensor]] | None = None
        self._decided = False

    def add_predict_files(self, paths: list[Path], channels: int, transform, first_id: int) -> None:
        """The predict split: ``paths`` read as ``channels``-channel images, then ``transform``
        (the evaluation transform, resizing to the training images' size); ids from ``first_id``."""
        self.predict_paths, self.predict_offset = list(paths), first_id
        ids = list(range(first_id, first_id + len(paths)))
        self.sets["predict"] = FileImages(self.predict_paths, None, ids, channels, transform)

    def predict_split(self) -> str:
        return "predict" if self.predict_files else "test"

    collate = staticmethod(collate_images)

    def _loader(self, split: str, shuffle: bool = False) -> DataLoader | DeviceLoader:
        resident = self.resident(split) if split in ("train", "val", "test") else None
        if resident is not None:
            return self.device_loader(split, resident, shuffle)
        collate = self.collate
        if split == "train" and self.batch_augment:
            dtype, channels = self._raw_format()
            collate = AugmentedCollate(self.collate, self._bound_batch_augment(dtype, channels, torch.device("cpu")))
        return DataLoader(self.sets[split], batch_size=self.batch_size, shuffle=shuffle,
                          num_workers=self.num_workers, collate_fn=collate,
                          persistent_workers=self.num_workers > 0)

    def _raw_format(self) -> tuple[torch.dtype, int]:
        """The stored training pixels' dtype (``background`` is given in it) and channels: in-memory
        images' own; files are read as floats (one item read for its channels)."""
        train = self.sets["train"]
        if isinstance(train, TensorImages):
            return train.images.dtype, train.images.shape[1]
        return torch.float32, train[0]["image"].shape[0]

    def _bound_batch_augment(self, raw_dtype: torch.dtype, channels: int, device: torch.device) -> list[BatchAugment]:
        """``batch_augment`` told the padding's fill (the background in the model's input) and the class count."""
        fill = self.pad_fill(raw_dtype, channels, device)
        for a in self.batch_augment:
            a.bind(fill=fill, num_classes=self.num_classes)
        return self.batch_augment

    # -- data on the device (``device_loader.py``) --------------------------------------
    def prepare_batch(self) -> ScaleNormalize | None:
        """The deterministic transform of a raw batch (B, C, H, W) into the model's input (scaling,
        normalization), run on the device; None: the stored values are the input."""
        return None

    def resident_sets(self) -> dict[str, dict[str, Tensor]] | None:
        """Per split, the raw tensors that can stay on the device (``image``, ``y``, ``ids``);
        None where the data is not in memory (files read per item)."""
        if not all(isinstance(self.sets.get(s), TensorImages) for s in ("train", "val", "test")):
            return None
        return {s: {"image": d.images, "y": d.labels, "ids": d.ids}
                for s in ("train", "val", "test") for d in [self.sets[s]]}

    def resident_estimate(self) -> int | None:
        """The bytes ``resident_sets`` would take, where reading them costs time (files): the
        budget is checked before reading. None: read them and count."""
        return None

    def pad_fill(self, raw_dtype: torch.dtype, channels: int, device: torch.device) -> Tensor:
        """(C,) what a crop's padding shows in the model's input: the ``background`` pixel
        after ``prepare_batch``."""
        prepare = self.prepare_batch()
        raw = torch.full((1, channels, 1, 1), self.background, dtype=raw_dtype, device=device)
        return (prepare(raw) if prepare is not None else raw.float()).reshape(channels)

    def training_device(self) -> torch.device:
        """The attached trainer's device (the CPU without a trainer)."""
        trainer = self.trainer
        return trainer.strategy.root_device if trainer is not None else torch.device("cpu")

    def resident(self, split: str) -> dict[str, Tensor] | None:
        """``split``'s tensors on the training device, or None when the data stays with the CPU
        loader. Decided once (after ``setup``), said in one log line: ``on_device: auto`` puts
        the data there when it is in memory, no per-sample ``train_transforms`` run, and all
        splits take at most ``device_memory_share`` of the device's memory (a GPU's total memory,
        the host's RAM on the CPU). Float tensors are checked for NaN/inf on the CPU first."""
        if not self._decided:
            self._decided = True
            self._resident = self._place()
        return None if self._resident is None else self._resident[split]

    def _place(self) -> dict[str, dict[str, Tensor]] | None:
        name = type(self).__name__
        if self.on_device is False:
            rank_zero_info(f"{name}: data with the CPU loader (on_device: false)")
            return None
        if self.augment and self.train_transforms:
            rank_zero_info(f"{name}: data with the CPU loader: augment: true runs train_transforms per sample on "
                           "the CPU (on_device: auto; use augment: false and batch_augment to keep the data on the device)")
            return None
        estimate = self.resident_estimate()
        sets = self.resident_sets() if estimate is None else None
        if estimate is None and sets is None:
            if self.on_device is True:
                raise ValueError(f"{name}: on_device: true, but this data is read from files per item, not held "
                                 "in memory; set on_device: false or auto")
            rank_zero_info(f"{name}: data with the CPU loader: read from files per item (on_device: auto)")
            return None
        device = self.training_device()
        size = estimate if estimate is not None else sum(resident_bytes(t) for t in sets.values())
        share = share_that_fits(name, "the data takes", "it stays", size, device, self.device_memory_share,
                                self.on_device)
        if share is None:
            return None
        if sets is None:  # read now that they are known to fit
            sets = self.resident_sets()
            size = sum(resident_bytes(t) for t in sets.values())
            _, share = memory_share(size, device)
        for split, tensors in sets.items():
            check_finite(split, tensors, self.describe)
        out = {s: {k: v.to(device) for k, v in t.items()} for s, t in sets.items()}
        augs = f" ({', '.join(type(a).__name__ for a in self.batch_augment)})" if self.batch_augment else ""
        # one line at the start of the run, in the console (Lightning's rank-zero logger)
        rank_zero_info(f"{name}: data on {device}: {fmt_bytes(size)} = {share} (at most "
                       f"{100 * self.device_memory_share:.0f}%, on_device: {self.on_device}); batches drawn and "
                       f"augmented there{augs}")
        return out

    def device_loader(self, split: str, tensors: dict[str, Tensor], shuffle: bool) -> DeviceLoader:
        device = tensors["image"].device
        steps = []
        prepare = self.prepare_batch()
        if prepare is not None:
            steps.append(lambda batch, g: {**batch, "image": prepare(batch["image"])})
        if split == "train" and self.batch_augment:
            steps += self._bound_batch_augment(tensors["image"].dtype, tensors["image"].shape[1], device)
        n = len(tensors["ids"])
        if split == "train":
            return DeviceLoader(tensors, self.batch_size, sampler=DeviceSampler(n, device, shuffle=shuffle),
                                transforms=steps)
        order, bs = eval_order(n, self.batch_size, device)
        return DeviceLoader(tensors, bs, order=order, transforms=steps)

    def test_items(self) -> Dataset:
        """The test images: ``items[i]`` is a dict of ``image`` (C, H, W), ``y`` and ``id``."""
        return self.sets["test"]

    def display_image(self, image: Tensor) -> np.ndarray:
        """(C, H, W) model input -> (H, W) or (H, W, 3) array in [0, 1] for plotting."""
        img = image.detach().cpu().float()
        img = (img - img.min()) / (img.max() - img.min()).clamp(min=1e-8)
        return img[0].numpy() if img.shape[0] == 1 else img[:3].permute(1, 2, 0).numpy()


# -- digits ----------------------------------------------------------------------------

    def default_reports(self) -> list:
        """The per-class report, attention maps of 8 test images, the 16 most confident mistakes."""
        from vecset.pipelines.images.mistakes import MistakesReport  # matplotlib: when asked
        from vecset.pipelines.images.reports import AttentionMapsReport
        from vecset.pipelines.reports.defaults import scored

        return [*scored(self), AttentionMapsReport(), MistakesReport()]

