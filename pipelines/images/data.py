"""Image classification DataModules: scikit-learn's 8x8 digits (the default job), the
user's own image folders (torchvision ImageFolder layout) and CIFAR-10 from a local folder.

Every batch is ``{"image": (B, C, H, W) float, "y": (B,) long, "ids": (B,) long}``; the
pixel/patch encoders in ``encoders/image/`` turn the image into a VectorSet. What an image
file's format means (modes, bit depths, channels, the errors naming a file) is
``encoders/image/reading.py``'s; these modules find the files, split, and batch.
Digits: Alpaydin & Kaynak 1995 (UCI optdigits), shipped with scikit-learn.
ImageFolder and CIFAR-10 (Krizhevsky 2009) through torchvision, never downloading.
"""

from __future__ import annotations

import logging
from collections import Counter
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

log = logging.getLogger(__name__)


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
        on_device: keep the splits on the training device and draw batches there
            (``device_loader.py``): ``auto`` when they fit in ``device_memory_share`` of its
            memory and no per-sample ``train_transforms`` run (``augment: false``), else the CPU
            loader; said in one log line at the start of a run.
        device_memory_share: the share of the device's memory (a GPU's total, the host's RAM on
            the CPU) the resident data may take.
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
                 on_device: bool | Literal["auto"] = "auto", device_memory_share: float = 0.5,
                 batch_augment: list[BatchAugment] | None = None) -> None:
        super().__init__(batch_size, num_workers, on_device, device_memory_share, batch_augment, augment)
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


def training_folder(root: Path) -> Path:
    """Where an image folder's training classes are: ``root/train`` when it has one, else ``root``."""
    return root / "train" if (root / "train").is_dir() else root


def class_folders(root: Path) -> list[str]:
    """The class folders of ``root`` (not hidden), sorted: the class names, in index order."""
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def folder_class_count(root: str) -> tuple[int | None, str, str]:
    """The class count an image folder's training classes give (its folder names only, no image
    read); None where ``root`` is not a folder yet (``setup`` then says so)."""
    found = training_folder(Path(root))
    classes = class_folders(found) if found.is_dir() else []
    return len(classes) or None, "root", f"{root} ({len(classes)} class folders in {found})"


def scan_image_folder(root: Path, skip_non_images: bool) -> tuple[list[str], dict[str, list[Path]]]:
    """Class folders of ``root`` and their image files, sorted.

    An empty class folder is an error. A file without an image extension is an error unless
    ``skip_non_images`` (then it is counted and logged); hidden files (.DS_Store) are
    skipped, counted and logged.
    """
    if not root.is_dir():
        raise FileNotFoundError(f"image folder {root} does not exist (expected <root>/<class>/<image files>)")
    classes = class_folders(root)
    if not classes:
        raise ValueError(f"image folder {root} has no class subfolders (expected <root>/<class>/<image files>)")
    files: dict[str, list[Path]] = {}
    skipped: Counter = Counter()
    for c in classes:
        found = []
        for p in sorted((root / c).rglob("*")):
            if p.is_dir():
                continue
            if p.name.startswith("."):
                skipped["hidden"] += 1
            elif p.suffix.lower() in IMAGE_EXTENSIONS:
                found.append(p)
            elif skip_non_images:
                skipped["non-image"] += 1
            else:
                raise ValueError(
                    f"{p}: not an image file (extension {p.suffix or 'none'!r}; expected one of "
                    f"{', '.join(IMAGE_EXTENSIONS)}); remove it or set skip_non_images: true"
                )
        if not found:
            raise ValueError(f"class folder {root / c} is empty: no image files (expected at least one of "
                             f"{', '.join(IMAGE_EXTENSIONS)})")
        files[c] = found
    if skipped:
        log.warning("%s: skipped %s", root, ", ".join(f"{n} {k} file(s)" for k, n in sorted(skipped.items())))
    return classes, files


class ImageFolderDataModule(ImageDataModule):
    """The user's images in torchvision's ImageFolder layout.

    Either ``root/train/<class>/*``, ``root/val/<class>/*`` (optional) and
    ``root/test/<class>/*``, or one ``root/<class>/*`` split by ``val_fraction`` /
    ``test_fraction`` (stratified, ``split_seed``). The class list (and the number of
    classes) is read from the training folders; a class in val/test that training lacks is
    an error.

    Every image is checked in ``setup`` (header only): a corrupt file, one whose mode
    does not match ``channels`` (1 grey, 3 RGB) without ``convert: true``, or one of 32-bit
    integer pixels (no range to scale from) is an error naming the file.

    Pixels are scaled to [0, 1] by their depth's range (``read_image``): 8-bit by 255,
    16-bit (grey PNG/TIFF/PGM, RGB PNG) by 65535; float images (mode F) are taken as they
    are, and a NaN or inf pixel in one is an error naming the file.

    Args:
        root: the folder.
        channels: 1 (grey) or 3 (RGB), what the encoder's in_channels expects.
        convert: convert images of another mode (RGB -> L, L/P/RGBA -> RGB) instead of failing.
        image_size: resize every image to (H, W) (an int: a square); None keeps the size,
            and then every image must share it.
        mean, std: per-channel normalization after scaling pixels to [0, 1] (see above).
        augment: apply the training transforms.
        train_transforms: torchvision v2 transforms for training images (``class_path`` /
            ``init_args`` in the YAML), run after resizing, on the image before scaling and
            normalization (uint8 for 8-bit files); None: ``folder_augment()``, a random
            horizontal flip and a small affine (rotation 10 degrees, shift 10%), meant for
            photos: it mirrors digits and text, so give your own list for those.
        val_fraction, test_fraction, split_seed: the split of a single folder (and of
            train into train/val when there is no val folder).
        skip_non_images: skip (count and log) files without an image extension instead of failing.
        predict_files: image files or folders for ``vecset predict``, converted to ``channels``
            and resized to the training images' size.
        batch_size, num_workers, on_device, device_memory_share, batch_augment: as in DigitsDataModule.
            On the device, every image is read once (resized and normalized, float32) at the
            start of a run; ``on_device: auto`` checks their size before reading them.
    """

    def __init__(self, root: str, channels: int = 3, convert: bool = False,
                 image_size: int | list[int] | None = None, mean: Sequence[float] | None = None,
                 std: Sequence[float] | None = None, augment: bool = False,
                 train_transforms: list[v2.Transform] | None = None, val_fraction: float = 0.1,
                 test_fraction: float = 0.1, split_seed: int = 0, skip_non_images: bool = False,
                 predict_files: list[str] | None = None, batch_size: int = 64, num_workers: int = 0,
                 on_device: bool | Literal["auto"] = "auto", device_memory_share: float = 0.5,
                 batch_augment: list[BatchAugment] | None = None) -> None:
        super().__init__(batch_size, num_workers, on_device, device_memory_share, batch_augment, augment)
        check_train_transforms(augment, train_transforms)
        if channels not in (1, 3):
            raise ValueError(f"channels must be 1 (grey) or 3 (RGB), got {channels}")
        self.root, self.channels, self.convert = Path(root), channels, convert
        self.image_size = (image_size, image_size) if isinstance(image_size, int) else (
            tuple(image_size) if image_size is not None else None)
        self.mean = list(mean) if mean is not None else [0.5] * channels
        self.std = list(std) if std is not None else [0.5] * channels
        if len(self.mean) != channels or len(self.std) != channels:
            raise ValueError(f"mean and std need {channels} values (one per channel), got {self.mean}, {self.std}")
        self.augment = augment
        self.train_transforms = list(train_transforms) if train_transforms is not None else folder_augment()
        self.val_fraction, self.test_fraction, self.split_seed = val_fraction, test_fraction, split_seed
        self.skip_non_images = skip_non_images
        self.predict_files = list(predict_files) if predict_files else None
        self.paths: list[Path] = []
        self._sizes: dict[tuple[int, int], Path] = {}
        self.class_names = None

    @classmethod
    def model_links(cls) -> list[ModelLink]:
        """``channels`` is the encoder's ``in_channels``; the class folders' count (read from
        ``root`` at parse: the folder names) the head's ``num_outputs``."""
        return [ModelLink("image channels", ("channels",), "encoder", "in_channels", lambda c: (c, "channels", str(c))),
                ModelLink("class count", ("root",), "head", "num_outputs", folder_class_count)]

    # -- checks -------------------------------------------------------------------------
    def _check_files(self, paths: list[Path]) -> None:
        for size, p in check_images(paths, self.channels, self.convert).items():
            self._sizes.setdefault(size, p)  # across all splits: one batch may not mix sizes
        if self.image_size is None and len(self._sizes) > 1:
            (s1, p1), (s2, p2) = list(self._sizes.items())[:2]
            raise ValueError(f"images differ in size ({p1}: {s1[0]}x{s1[1]}, {p2}: {s2[0]}x{s2[1]} as WxH) "
                             "and image_size is not set; set image_size to resize them")

    # -- setup --------------------------------------------------------------------------
    def _transform(self, train: bool, size: tuple[int, int] | None = None):
        """Resize (to ``size``, else ``image_size``), the training transforms, scale, normalize."""
        steps = [v2.ToImage()]
        size = size or self.image_size
        if size is not None:
            steps.append(v2.Resize(list(size), antialias=True))
        if train and self.augment:
            steps += self.train_transforms
        steps += [v2.ToDtype(torch.float32, scale=True), v2.Normalize(self.mean, self.std)]
        return v2.Compose(steps)

    def _add(self, files: list[Path]) -> list[int]:
        ids = list(range(len(self.paths), len(self.paths) + len(files)))
        self.paths += files
        return ids

    def setup(self, stage: str | None = None) -> None:
        if self.sets:
            return
        subdirs = {s: self.root / s for s in ("train", "val", "test")}
        split_files: dict[str, tuple[list[Path], list[int]]] = {}
        if subdirs["train"].is_dir():
            classes, train_files = scan_image_folder(subdirs["train"], self.skip_non_images)
            to_idx = {c: i for i, c in enumerate(classes)}
            split_files["train"] = _flatten(train_files, to_idx)
            for s in ("val", "test"):
                if not subdirs[s].is_dir():
                    continue
                cs, fs = scan_image_folder(subdirs[s], self.skip_non_images)
                missing = [c for c in cs if c not in to_idx]
                if missing:
                    raise ValueError(
                        f"{subdirs[s]}: class folder(s) {missing} are not in the training folder "
                        f"{subdirs['train']} (training classes: {classes}); every class must have training images"
                    )
                split_files[s] = _flatten(fs, to_idx)
            if "test" not in split_files:
                raise FileNotFoundError(f"{self.root} has a train/ folder but no test/ folder "
                                        f"(expected {subdirs['test']})")
            # every file found, in train, val, test order, then checked in one pass (the reader's)
            self._check_files([p for s in ("train", "val", "test") if s in split_files for p in split_files[s][0]])
        else:
            classes, files = scan_image_folder(self.root, self.skip_non_images)
            to_idx = {c: i for i, c in enumerate(classes)}
            paths, labels = _flatten(files, to_idx)
            self._check_files(paths)
            few = [str(self.root / c) for c in classes if len(files[c]) < 3]
            if few:
                raise ValueError(f"class folder(s) {few} hold fewer than 3 images: a stratified "
                                 "train/val/test split needs at least one image of each class in each")
            rest, test = self._split(paths, labels, self.test_fraction, "test_fraction")
            split_files["test"] = ([paths[i] for i in test], [labels[i] for i in test])
            split_files["train"] = ([paths[i] for i in rest], [labels[i] for i in rest])
        if "val" not in split_files:
            paths, labels = split_files["train"]
            tr, va = self._split(paths, labels, self.val_fraction, "val_fraction")
            split_files["train"] = ([paths[i] for i in tr], [labels[i] for i in tr])
            split_files["val"] = ([paths[i] for i in va], [labels[i] for i in va])
        self.class_names = classes
        # every image is resized to image_size, or (_check_files) all share one size; PIL's is (W, H)
        h, w = self.image_size if self.image_size is not None else next(iter(self._sizes))[::-1]
        self.image_shape = (self.channels, h, w)
        splits = ("train", "val", "test")
        ids = {s: self._add(split_files[s][0]) for s in splits}
        transforms = {s: self._transform(s == "train") for s in splits}
        self.sets = {s: FileImages(*split_files[s], ids[s], self.channels, transforms[s]) for s in splits}
        if self.predict_files:
            paths = list_predict_files(self.predict_files)
            self.add_predict_files(paths, self.channels, self._transform(False, size=(h, w)),
                                   first_id=self._add(paths)[0])
        log.info("%s: %d classes, %s images (train/val/test)", self.root, len(classes),
                 "/".join(map(str, [len(self.sets[s]) for s in splits])))

    # -- data on the device: the images read once, resized and normalized ---------------
    def resident_estimate(self) -> int | None:
        C, H, W = self.image_shape
        n = sum(len(self.sets[s]) for s in ("train", "val", "test"))
        return n * (C * H * W * 4 + 16)  # float32 pixels, the label and the id

    def resident_sets(self) -> dict[str, dict[str, Tensor]]:
        """Every image of each split read once with its transform (deterministic: resizing and
        normalization, ``augment`` is off on this path), as float32 (N, C, H, W)."""
        out = {}
        for s in ("train", "val", "test"):
            ds: FileImages = self.sets[s]  # type: ignore[assignment]
            items = [ds[i] for i in range(len(ds))]
            out[s] = {"image": torch.stack([it["image"] for it in items]),
                      "y": torch.tensor([int(it["y"]) for it in items]),
                      "ids": torch.tensor([int(it["id"]) for it in items])}
        return out

    def pad_fill(self, raw_dtype: torch.dtype, channels: int, device: torch.device) -> Tensor:
        # the images are stored normalized: a black pixel (0) after the normalization
        return ((0.0 - torch.tensor(self.mean)) / torch.tensor(self.std)).to(device)

    def _split(self, paths: list[Path], labels: list[int], fraction: float, name: str):
        from sklearn.model_selection import train_test_split

        try:
            return train_test_split(np.arange(len(paths)), test_size=fraction, stratify=labels,
                                    random_state=self.split_seed)
        except ValueError as e:
            raise ValueError(f"{self.root}: cannot split {len(paths)} images of {len(set(labels))} classes "
                             f"with {name}={fraction} (stratified): {e}") from e

    def test_batch(self, n: int) -> dict | None:
        """The first ``n`` test images read and batched by the reader's dataset in one call."""
        return self.sets["test"].first_batch(n)

    def describe(self, sample_id: int) -> str:
        return str(self.paths[sample_id])


def folder_augment() -> list[v2.Transform]:
    """The folder data module's training transforms when ``augment: true`` and no
    ``train_transforms`` are given (what ``augment: true`` always did)."""
    return [v2.RandomHorizontalFlip(), v2.RandomAffine(degrees=10, translate=(0.1, 0.1))]


def _flatten(files: dict[str, list[Path]], to_idx: dict[str, int]) -> tuple[list[Path], list[int]]:
    paths, labels = [], []
    for c, fs in files.items():
        paths += fs
        labels += [to_idx[c]] * len(fs)
    return paths, labels


# -- CIFAR-10 --------------------------------------------------------------------------

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
        batch_size, num_workers, on_device, device_memory_share, batch_augment: as in DigitsDataModule.
    """

    image_shape = (3, 32, 32)
    class_count = 10
    MEAN = (0.4914, 0.4822, 0.4465)
    STD = (0.2470, 0.2435, 0.2616)

    def __init__(self, root: str, val_fraction: float = 0.1, split_seed: int = 0, augment: bool = True,
                 train_transforms: list[v2.Transform] | None = None, batch_size: int = 128,
                 num_workers: int = 0, on_device: bool | Literal["auto"] = "auto", device_memory_share: float = 0.5,
                 batch_augment: list[BatchAugment] | None = None) -> None:
        super().__init__(batch_size, num_workers, on_device, device_memory_share, batch_augment, augment)
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
