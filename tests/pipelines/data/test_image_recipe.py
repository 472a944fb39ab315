"""The CCT training recipe's data side (issue 46): RandAugment / TrivialAugment on the data
modules' stored images (uint8 works, floats outside [0, 1] are refused), and batch_augment's
MixUp on the CPU loader's batches after the per-sample transforms."""

from __future__ import annotations

import pytest
import torch
from test_fashion_mnist import write_dataset
from torch.utils.data import DataLoader
from torchvision.transforms import v2

from vecset.pipelines import DigitsDataModule, FashionMNISTDataModule
from vecset.pipelines.data.batch_augment import MixUp, RandomErasing


@pytest.mark.parametrize("policy", [v2.RandAugment, v2.TrivialAugmentWide])
def test_auto_augment_policies_run_on_fashion_mnist_uint8(policy):
    dm = FashionMNISTDataModule(train_transforms=[policy()])  # no I/O before setup
    train, plain = dm._transform(train=True), dm._transform(train=False)
    img = torch.randint(0, 256, (1, 28, 28), dtype=torch.uint8)
    outs = []
    for seed in range(40):
        torch.manual_seed(seed)
        outs.append(train(img))
    torch.manual_seed(3)
    torch.testing.assert_close(train(img), outs[3])  # seeded
    assert all(o.dtype == torch.float32 and o.shape == (1, 28, 28) for o in outs)
    changed = sum(not torch.equal(o, plain(img)) for o in outs)
    assert changed >= 20  # most draws change the image (a policy also draws the identity)


def test_auto_augment_on_digits_floats_is_refused():
    with pytest.raises(ValueError) as e:
        DigitsDataModule(train_transforms=[v2.RandAugment()])
    assert str(e.value).splitlines()[0].startswith("train_transforms: RandAugment needs uint8 images or floats in [0, 1]")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return str(write_dataset(tmp_path_factory.mktemp("fm"), n_train=400, n_test=20))


def first_batches(root: str, seed: int, n: int) -> list[dict]:
    dm = FashionMNISTDataModule(root=root, val_fraction=0.2, batch_size=32, augment=True,
                                batch_augment=[MixUp(alpha=1.0), RandomErasing(p=0.5)])
    dm.setup("fit")
    torch.manual_seed(seed)
    loader = dm.train_dataloader()
    assert isinstance(loader, DataLoader)  # per-sample transforms: the CPU loader
    batches = []
    for batch in loader:
        batches.append(batch)
        if len(batches) == n:
            break
    return batches


def test_mixup_on_the_cpu_loader_after_per_sample_transforms(root):
    batches = first_batches(root, seed=0, n=10)
    again = first_batches(root, seed=0, n=1)
    torch.testing.assert_close(again[0]["image"], batches[0]["image"])  # seeded
    y = torch.cat([b["y"] for b in batches])  # (N, 10) class probabilities
    assert y.dtype == torch.float32 and y.shape[1] == 10
    torch.testing.assert_close(y.sum(1), torch.ones(len(y)))
    two = (y > 0).sum(1) == 2  # mixed with an image of another class
    assert two.float().mean() > 0.8
    # lambda ~ Beta(1, 1) per image: the larger share is uniform on [0.5, 1], mean 0.75
    assert y[two].max(1).values.mean().item() == pytest.approx(0.75, abs=0.04)
