"""Data on the device (``device_loader.py``) on the CPU as the device: every sample once an
epoch (the classic loader's set), the classic loader's batches without augmentation, exact
mid-epoch resume (order and augmentation), sharding, the on_device decision and its errors."""

from __future__ import annotations

import logging

import pytest
import torch
from test_fashion_mnist import write_dataset
from torch.utils.data import DataLoader

from vecset.pipelines import FashionMNISTDataModule
from vecset.pipelines.data import samplers
from vecset.pipelines.data.batch_augment import HorizontalFlip, MixUp, RandomCrop, RandomErasing
from vecset.pipelines.data.device_loader import DeviceLoader, DeviceSampler, check_finite
from vecset.pipelines.data.options import DevicePlacement
from vecset.pipelines.images.options import FolderSplit


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return str(write_dataset(tmp_path_factory.mktemp("fm"), n_train=100, n_test=30))


def module(root: str, **kw) -> FashionMNISTDataModule:
    kw = {"val_fraction": 0.2, "batch_size": 16, "augment": False} | kw
    dm = FashionMNISTDataModule(root=root, **kw)
    dm.setup("fit")
    return dm


def epoch_ids(loader, epoch: int) -> list[int]:
    loader.sampler.set_epoch(epoch) if hasattr(loader.sampler, "set_epoch") else None
    return [i for b in loader for i in b["ids"].tolist()]


def test_every_sample_once_an_epoch_as_the_classic_loader(root, monkeypatch):
    monkeypatch.setenv("PL_GLOBAL_SEED", "3")
    dev = module(root).train_dataloader()
    assert isinstance(dev, DeviceLoader) and len(dev) == 5  # 80 images / 16
    classic = module(root, placement=DevicePlacement(on_device=False)).train_dataloader()
    assert isinstance(classic, DataLoader)
    every = set(classic.dataset.ids.tolist())
    e0, e1 = epoch_ids(dev, 0), epoch_ids(dev, 1)
    assert sorted(e0) == sorted(e1) == sorted(every) and len(e0) == 80  # each once, the classic set
    assert e0 != e1 and e0 == epoch_ids(dev, 0)  # a new order each epoch, the same for an epoch
    assert set(epoch_ids(classic, 0)) == set(e0)


def test_same_batches_as_the_classic_loader_without_augmentation(root):
    dev, classic = module(root).val_dataloader(), module(root, placement=DevicePlacement(on_device=False)).val_dataloader()
    assert isinstance(dev, DeviceLoader) and len(dev) == len(classic) == 2
    for a, b in zip(dev, classic, strict=True):
        assert a.keys() == b.keys()
        assert torch.equal(a["ids"], b["ids"]) and torch.equal(a["y"], b["y"])
        torch.testing.assert_close(a["image"], b["image"])  # scaled and normalized as per sample


def test_shards_under_two_processes_cover_every_sample(monkeypatch):
    """DistributedSampler's sharding: padded to an equal share, rank::replicas."""
    shards = []
    for rank in (0, 1):
        monkeypatch.setattr(samplers, "world", lambda rank=rank: (2, rank))
        s = DeviceSampler(11, "cpu", shuffle=True, seed=5)
        s.set_epoch(2)
        shards.append(s.indices().tolist())
    assert len(shards[0]) == len(shards[1]) == 6
    assert set(shards[0]) | set(shards[1]) == set(range(11))
    assert len(set(shards[0]) & set(shards[1])) == 1  # the one padded repeat


def test_mid_epoch_resume_is_exact_order_and_augmentation(root, monkeypatch):
    monkeypatch.setenv("PL_GLOBAL_SEED", "7")
    augs = lambda: [RandomCrop(2), HorizontalFlip(0.5), RandomErasing(0.5), MixUp(0.4)]  # noqa: E731
    full = module(root, batch_augment=augs()).train_dataloader()
    full.sampler.set_epoch(1)
    whole = list(full)
    resumed = module(root, batch_augment=augs()).train_dataloader()
    resumed.sampler.set_epoch(1)
    resumed.sampler.resume_at(1, 2 * 16)  # as ResumeState does after 2 batches
    tail = list(resumed)
    assert len(tail) == len(whole) - 2
    for a, b in zip(tail, whole[2:], strict=True):
        assert torch.equal(a["ids"], b["ids"]) and torch.equal(a["image"], b["image"]) and torch.equal(a["y"], b["y"])
    # the skip applies once: the next epoch is whole again
    resumed.sampler.set_epoch(2)
    assert len(list(resumed)) == len(whole)


def test_augmented_batches_are_soft_labelled_and_vary_per_epoch(root):
    dl = module(root, batch_augment=[RandomCrop(2), HorizontalFlip(), MixUp(1.0)]).train_dataloader()
    b0 = next(iter(dl))
    assert b0["y"].shape == (16, 10) and torch.allclose(b0["y"].sum(1), torch.ones(16))
    dl.sampler.set_epoch(1)
    assert not torch.equal(next(iter(dl))["image"], b0["image"])


def test_on_device_auto_decides_and_says_it_once(root, caplog):
    caplog.set_level(logging.INFO)
    assert isinstance(module(root, augment=True).train_dataloader(), DataLoader)  # per-sample CPU transforms
    assert "augment: true runs train_transforms per sample on the CPU" in caplog.text
    caplog.clear()
    dm = module(root)
    dm.train_dataloader(), dm.val_dataloader(), dm.test_dataloader()
    lines = [r.getMessage() for r in caplog.records if "data on cpu" in r.getMessage()]
    assert len(lines) == 1 and "at most 50%" in lines[0], lines
    caplog.clear()
    assert isinstance(module(root, placement=DevicePlacement(on_device="auto", device_memory_share=1e-9)).train_dataloader(), DataLoader)
    assert "more than device_memory_share" in caplog.text


@pytest.mark.parametrize("kw, first_line", [
    ({"placement": DevicePlacement(on_device=True, device_memory_share=1e-9)}, "FashionMNISTDataModule: the data takes"),
])
def test_on_device_true_that_does_not_fit_is_an_error(root, kw, first_line):
    with pytest.raises(ValueError) as e:
        module(root, **kw).train_dataloader()
    assert str(e.value).splitlines()[0].startswith(first_line)


@pytest.mark.parametrize("kw, first_line", [
    ({"placement": DevicePlacement(on_device=True), "augment": True}, "on_device: true with augment: true"),
    ({"placement": DevicePlacement(on_device="yes")}, "on_device must be true, false or auto"),
])
def test_conflicting_options_are_errors(root, kw, first_line):
    with pytest.raises(ValueError) as e:
        FashionMNISTDataModule(root=root, **({"augment": False} | kw))
    assert str(e.value).splitlines()[0].startswith(first_line)


def test_non_finite_inputs_are_an_error_naming_the_sample():
    x = torch.zeros(6, 1, 4, 4)
    x[4, 0, 1, 2] = float("nan")
    tensors = {"image": x, "y": torch.zeros(6, dtype=torch.long), "ids": torch.arange(10, 16)}
    with pytest.raises(ValueError, match=r"^train split: image #14: non-finite values \(NaN or inf\) in 'image'"):
        check_finite("train", tensors, lambda i: f"image #{i}")
    check_finite("train", {**tensors, "image": torch.zeros(6, 1, 4, 4)}, str)  # finite: no error


def test_crop_padding_shows_each_datas_background(root):
    """The padding a RandomCrop uncovers is the data's background after its normalization:
    Fashion-MNIST's black (0) normalized, the digits' -1."""
    from vecset.pipelines import DigitsDataModule
    from vecset.pipelines.images import fashion_mnist as fm

    crop = RandomCrop(2)
    module(root, batch_augment=[crop]).train_dataloader()
    torch.testing.assert_close(crop.fill, torch.tensor([(0 - fm.MEAN) / fm.STD]))
    crop = RandomCrop(2)
    digits = DigitsDataModule(augment=False, batch_augment=[crop], batch_size=32)
    digits.setup("fit")
    batch = next(iter(digits.train_dataloader()))
    assert crop.fill.tolist() == [-1.0] and batch["image"].min() >= -1.0


def test_image_folder_on_the_device_gives_the_classic_batches(tmp_path, caplog):
    """Small images of a folder, read once (resized, normalized) onto the device: the
    validation batches equal the CPU loader's, the training epoch holds every image once, and
    the crop pads with normalized black."""
    import numpy as np
    from PIL import Image

    from vecset.pipelines import ImageFolderDataModule

    rng = np.random.default_rng(0)
    for c in ("cat", "dog"):
        (tmp_path / c).mkdir()
        for i in range(12):
            Image.fromarray(rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)).save(tmp_path / c / f"{i}.png")
    caplog.set_level(logging.INFO)

    def folder(**kw):
        dm = ImageFolderDataModule(root=str(tmp_path), image_size=8, batch_size=4, split=FolderSplit(val_fraction=0.25, test_fraction=0.25), **kw)
        dm.setup("fit")
        return dm

    crop = RandomCrop(1)
    dev = folder(batch_augment=[crop])
    assert isinstance(dev.train_dataloader(), DeviceLoader) and "ImageFolderDataModule: data on cpu" in caplog.text
    classic = folder(placement=DevicePlacement(on_device=False))
    for a, b in zip(dev.val_dataloader(), classic.val_dataloader(), strict=True):
        assert torch.equal(a["ids"], b["ids"]) and torch.equal(a["y"], b["y"])
        torch.testing.assert_close(a["image"], b["image"])
    assert sorted(epoch_ids(dev.train_dataloader(), 0)) == sorted(classic.sets["train"].ids)
    torch.testing.assert_close(crop.fill, torch.full((3,), -1.0))  # (0 - 0.5) / 0.5
