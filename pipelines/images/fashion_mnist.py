"""Fashion-MNIST from the four idx files that Debian's ``dataset-fashion-mnist`` installs.

Xiao, Rasul & Vollgraf 2017, "Fashion-MNIST: a Novel Image Dataset for Benchmarking Machine
Learning Algorithms" (arXiv:1708.07747; Zalando, Expat licence): 60,000 training and 10,000
test grey 28x28 images of 10 clothing classes, in LeCun's idx format. vecset never downloads
them: ``make fashion-mnist`` installs the Debian package (or says how), which puts them in
``/usr/share/datasets/fashion-mnist``.

The files are read with torchvision's idx reader (``torchvision.datasets.mnist``); it opens a
path and does not read gzip, so the ``.gz`` files are decompressed in memory and handed to it
as an anonymous in-memory file. A file that is not idx, is truncated, or whose image and label
counts differ is an error naming the file.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torchvision.transforms import v2

from vecset.encoders.image.idx import read_idx_split
from vecset.pipelines.data.batch_augment import BatchAugment
from vecset.pipelines.data.device_loader import ScaleNormalize
from vecset.pipelines.data.options import DevicePlacement, as_group
from vecset.pipelines.images.data import (
    ImageDataModule,
    TensorImages,
    check_train_transforms,
    list_predict_files,
)

log = logging.getLogger(__name__)

DEBIAN_PACKAGE = "dataset-fashion-mnist"
DEFAULT_ROOT = "/usr/share/datasets/fashion-mnist"
# the four files, by official split (the names of the original release and of Debian's package)
FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
# per-pixel mean and std of the 60,000 training images, pixels scaled to [0, 1]
MEAN, STD = 0.2860, 0.3530
NUM_CLASSES = 10


def class_names() -> list[str]:
    """The dataset's class names, in label order (torchvision's ``FashionMNIST.classes``)."""
    from torchvision.datasets import FashionMNIST

    return list(FashionMNIST.classes)


def install_hint(root: Path) -> str:
    return (f"install the Debian package {DEBIAN_PACKAGE} (`sudo apt-get install {DEBIAN_PACKAGE}` or "
            f"`make fashion-mnist` as root), which puts the four idx files in {DEFAULT_ROOT}, or set "
            f"data.init_args.root to a folder holding {', '.join(n + '[.gz]' for f in FILES.values() for n in f)} "
            f"(searched: {root})")


def find_files(root: str | Path) -> dict[str, tuple[Path, Path]]:
    """The (images, labels) paths of each official split under ``root``: ``name.gz`` or ``name``.

    A missing folder or file is a ``FileNotFoundError`` naming the package to install and what
    was searched."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"Fashion-MNIST not found: the folder {root} does not exist; {install_hint(root)}")
    found = {}
    for split, names in FILES.items():
        paths = []
        for name in names:
            candidates = [root / f"{name}.gz", root / name]
            path = next((p for p in candidates if p.is_file()), None)
            if path is None:
                raise FileNotFoundError(f"Fashion-MNIST not found: neither {candidates[0]} nor {candidates[1]} "
                                        f"exists; {install_hint(root)}")
            paths.append(path)
        found[split] = (paths[0], paths[1])
    return found


def read_split(images_path: Path, labels_path: Path) -> tuple[Tensor, Tensor]:
    """One official split: (N, 1, H, W) uint8 images and (N,) int64 labels in 0..9 (``read_idx_split``)."""
    return read_idx_split(images_path, labels_path, NUM_CLASSES, "Fashion-MNIST")


def _subset(idx: np.ndarray, labels: np.ndarray, keep: int | None, seed: int) -> np.ndarray:
    """A stratified, seeded subset of ``keep`` of the indices ``idx`` (all when None or more)."""
    if keep is None or keep >= len(idx):
        return idx
    if keep < 1:
        raise ValueError(f"a subset needs at least 1 image, got {keep}")
    from sklearn.model_selection import train_test_split

    few = keep < NUM_CLASSES  # fewer images than classes cannot be stratified
    part, _ = train_test_split(idx, train_size=keep, stratify=None if few else labels[idx], random_state=seed)
    return np.sort(part)


class FashionMNISTDataModule(ImageDataModule):
    """Fashion-MNIST: 28x28 grey images, 10 classes (names from torchvision's ``FashionMNIST``).

    The official test set (10,000) is the test split; ``val_fraction`` of the official
    training set (stratified by class, ``split_seed``) is the validation split, the rest
    (54,000 by default) the training split. Pixels are scaled to [0, 1] and normalized with
    the training images' mean and std.

    Training transforms (torchvision v2, on the (1, 28, 28) uint8 image before scaling) are,
    by default, a random crop of 28 after 2 pixels of zero padding and a horizontal flip
    (clothes are left-right symmetric, unlike digits); ``train_transforms`` replaces them
    with any list (``class_path``/``init_args`` in the YAML), ``augment: false`` turns them off.

    Args:
        root: folder holding the four idx files (``.gz`` or not); default: where the Debian
            package puts them.
        val_fraction, split_seed: the validation split.
        augment: apply the training transforms.
        train_transforms: the training transforms; None: the default above.
        mean, std: normalization after scaling to [0, 1].
        max_train, max_val, max_test: keep a stratified, seeded subset of that many images of
            the split (None: all); for quick trials and the debug config: a subset's test
            accuracy is not the benchmark's.
        predict_files: image files or folders for ``vecset predict`` (PNG, JPEG, ...); each is
            converted to grey and resized to 28x28. The dataset's images are light clothes on
            a black background: invert photos of dark clothes on white before predicting.
        batch_size, num_workers, placement, batch_augment: as in
            DigitsDataModule. With ``augment: false`` the splits (54,000 + 6,000 + 10,000 uint8
            images, 55 MB) go on the training device (``placement.on_device: auto``); scaling,
            normalization and ``batch_augment`` then run on whole batches there.
    """

    predictor = "vecset.pipelines.images.predictor.ImagePredictor"

    image_shape = (1, 28, 28)
    class_count = 10

    def __init__(self, root: str = DEFAULT_ROOT, val_fraction: float = 0.1, split_seed: int = 0,
                 augment: bool = True, train_transforms: list[v2.Transform] | None = None,
                 mean: float = MEAN, std: float = STD, max_train: int | None = None,
                 max_val: int | None = None, max_test: int | None = None,
                 predict_files: list[str] | None = None, batch_size: int = 128, num_workers: int = 0,
                 placement: DevicePlacement = DevicePlacement(on_device="auto"),
                 batch_augment: list[BatchAugment] | None = None) -> None:
        placement = as_group(DevicePlacement, placement, "placement")
        super().__init__(batch_size, num_workers, placement.on_device, placement.device_memory_share, batch_augment,
                         augment)
        if not 0 < val_fraction < 1:
            raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
        check_train_transforms(augment, train_transforms)
        self.root, self.val_fraction, self.split_seed = Path(root), val_fraction, split_seed
        self.augment = augment
        self.train_transforms = list(train_transforms) if train_transforms is not None else [
            v2.RandomCrop(28, padding=2), v2.RandomHorizontalFlip()]
        self.mean, self.std = mean, std
        self.max_train, self.max_val, self.max_test = max_train, max_val, max_test
        self.predict_files = list(predict_files) if predict_files else None
        self.class_names = class_names()
        # ids: the official training images, then the test images, then the predict files
        self.n_train, self.n_test = 60000, 10000

    def prepare_data(self) -> None:
        find_files(self.root)

    def _transform(self, train: bool) -> v2.Compose:
        steps = list(self.train_transforms) if train and self.augment else []
        return v2.Compose([*steps, v2.ToDtype(torch.float32, scale=True), v2.Normalize([self.mean], [self.std])])

    def prepare_batch(self) -> ScaleNormalize:
        return ScaleNormalize(255.0, [self.mean], [self.std])  # as _transform(train=False), on a batch

    def setup(self, stage: str | None = None) -> None:
        if self.sets:
            return
        if stage == "predict" and self.predict_files:
            # the class names are the dataset's and the model comes from a checkpoint:
            # predicting files needs neither the idx files nor the split
            self._setup_predict()
            return
        from sklearn.model_selection import train_test_split

        files = find_files(self.root)
        xtr, ytr = read_split(*files["train"])
        xte, yte = read_split(*files["test"])
        if xtr.shape[1:] != xte.shape[1:]:
            raise ValueError(f"{files['train'][0]} holds {tuple(xtr.shape[2:])} images but {files['test'][0]} "
                             f"{tuple(xte.shape[2:])}; both splits must share one image size")
        self.image_shape = tuple(xtr.shape[1:])
        self.n_train, self.n_test = len(ytr), len(yte)
        y = ytr.numpy()
        tr, va = train_test_split(np.arange(len(y)), test_size=self.val_fraction, stratify=y,
                                  random_state=self.split_seed)
        index = {"train": _subset(np.sort(tr), y, self.max_train, self.split_seed),
                 "val": _subset(np.sort(va), y, self.max_val, self.split_seed),
                 "test": _subset(np.arange(len(yte)), yte.numpy(), self.max_test, self.split_seed)}
        for split, idx in index.items():
            t = torch.as_tensor(idx)
            x, labels, offset = (xte, yte, self.n_train) if split == "test" else (xtr, ytr, 0)
            self.sets[split] = TensorImages(x[t], labels[t], t + offset, self._transform(split == "train"))
        if self.predict_files:
            self._setup_predict()
        log.info("Fashion-MNIST from %s: %s images (train/val/test)", self.root,
                 "/".join(str(len(self.sets[s])) for s in ("train", "val", "test")))

    def _setup_predict(self) -> None:
        h, w = self.image_shape[1:]
        transform = v2.Compose([v2.Resize([h, w], antialias=True), v2.ToDtype(torch.float32, scale=True),
                                v2.Normalize([self.mean], [self.std])])
        self.add_predict_files(list_predict_files(self.predict_files), channels=1, transform=transform,
                               first_id=self.n_train + self.n_test)

    def describe(self, sample_id: int) -> str:
        if self.predict_paths and sample_id >= self.predict_offset:
            return str(self.predict_paths[sample_id - self.predict_offset])
        if sample_id < self.n_train:
            return f"fashion-mnist train[{sample_id}]"
        return f"fashion-mnist t10k[{sample_id - self.n_train}]"
