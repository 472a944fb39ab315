"""The user's own images in torchvision's ImageFolder layout: find the class folders and files,
split, and batch; what an image file's format means is ``encoders/image/reading.py``'s.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torchvision.transforms import v2

from vecset.encoders.image import IMAGE_EXTENSIONS, FileImages, check_images
from vecset.pipelines.data.base import ModelLink
from vecset.pipelines.data.batch_augment import BatchAugment
from vecset.pipelines.data.options import DevicePlacement, as_group
from vecset.pipelines.images.data import (
    ImageDataModule,
    check_train_transforms,
    list_predict_files,
)
from vecset.pipelines.images.options import FolderSplit

log = logging.getLogger(__name__)


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
    ``root/test/<class>/*``, or one ``root/<class>/*`` split by ``split.val_fraction`` /
    ``test_fraction`` (stratified, ``split.seed``). The class list (and the number of
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
        split: the split of a single folder, and of train into train/val when there is no val
            folder (``FolderSplit``: ``val_fraction``, ``test_fraction``, ``seed``).
        skip_non_images: skip (count and log) files without an image extension instead of failing.
        predict_files: image files or folders for ``vecset predict``, converted to ``channels``
            and resized to the training images' size.
        batch_size, num_workers, placement, batch_augment: as in DigitsDataModule.
            On the device, every image is read once (resized and normalized, float32) at the
            start of a run; ``on_device: auto`` checks their size before reading them.
    """

    def __init__(self, root: str, channels: int = 3, convert: bool = False,
                 image_size: int | list[int] | None = None, mean: Sequence[float] | None = None,
                 std: Sequence[float] | None = None, augment: bool = False,
                 train_transforms: list[v2.Transform] | None = None, split: FolderSplit = FolderSplit(),
                 skip_non_images: bool = False, predict_files: list[str] | None = None, batch_size: int = 64,
                 num_workers: int = 0, placement: DevicePlacement = DevicePlacement(on_device="auto"),
                 batch_augment: list[BatchAugment] | None = None) -> None:
        placement, split = as_group(DevicePlacement, placement, "placement"), as_group(FolderSplit, split, "split")
        super().__init__(batch_size, num_workers, placement.on_device, placement.device_memory_share, batch_augment,
                         augment)
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
        self.val_fraction, self.test_fraction, self.split_seed = split.val_fraction, split.test_fraction, split.seed
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
