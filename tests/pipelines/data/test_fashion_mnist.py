"""FashionMNISTDataModule on small idx files written here (the idx header by hand, as the
format defines it): split, shapes, names, subsets, predict files, and the bad-input errors."""

from __future__ import annotations

import csv
import gzip
import json
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision.transforms import v2

from vecset.pipelines import FashionMNISTDataModule
from vecset.pipelines.images import fashion_mnist as fm

ROOT = Path(__file__).resolve().parents[3]
NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def idx_images(images: np.ndarray) -> bytes:
    n, h, w = images.shape
    return struct.pack(">IIII", 0x803, n, h, w) + images.astype(np.uint8).tobytes()


def idx_labels(labels: np.ndarray) -> bytes:
    return struct.pack(">II", 0x801, len(labels)) + labels.astype(np.uint8).tobytes()


def learnable(labels: np.ndarray, seed: int, size: int = 28) -> np.ndarray:
    """Noisy grey images whose brightness says the class (crops, flips and erasing keep it)."""
    rng = np.random.default_rng(seed)
    return labels[:, None, None] * 24 + rng.integers(0, 20, (len(labels), size, size))


def write_dataset(root: Path, n_train: int = 100, n_test: int = 30, gz: bool = True, size: int = 28) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for split, n, seed in (("train", n_train, 0), ("t10k", n_test, 1)):
        y = np.arange(n) % 10
        for kind, data in (("images-idx3", idx_images(learnable(y, seed, size))), ("labels-idx1", idx_labels(y))):
            name = root / f"{split}-{kind}-ubyte"
            if gz:
                (name.with_name(name.name + ".gz")).write_bytes(gzip.compress(data))
            else:
                name.write_bytes(data)
    return root


def test_reads_idx_files_split_shapes_and_class_names(tmp_path):
    dm = FashionMNISTDataModule(root=str(write_dataset(tmp_path)), val_fraction=0.2, batch_size=16)
    dm.setup("fit")
    assert {k: len(v) for k, v in dm.sets.items()} == {"train": 80, "val": 20, "test": 30}
    assert dm.class_names == NAMES and dm.num_classes == 10 and dm.image_shape == (1, 28, 28)
    assert dm.sets["train"].images.dtype == torch.uint8  # kept as bytes; scaled per sample
    batch = next(iter(dm.val_dataloader()))
    assert batch["image"].shape == (16, 1, 28, 28) and batch["image"].dtype == torch.float32
    assert batch["y"].dtype == torch.long
    # scaled to [0, 1], then normalized with the training set's statistics
    expected = (dm.sets["val"].images[0].float() / 255 - fm.MEAN) / fm.STD
    torch.testing.assert_close(dm.sets["val"][0]["image"], expected)
    train, val = set(dm.sets["train"].ids.tolist()), set(dm.sets["val"].ids.tolist())
    assert not train & val and train | val == set(range(100))
    assert np.bincount(dm.sets["val"].labels.numpy(), minlength=10).tolist() == [2] * 10  # stratified
    assert dm.sets["test"].ids.tolist() == list(range(100, 130))  # test ids follow the training images
    assert dm.describe(7) == "fashion-mnist train[7]" and dm.describe(103) == "fashion-mnist t10k[3]"


def test_split_is_seeded(tmp_path):
    root = str(write_dataset(tmp_path))

    def val_ids(seed):
        dm = FashionMNISTDataModule(root=root, val_fraction=0.2, split_seed=seed)
        dm.setup("fit")
        return dm.sets["val"].ids.tolist()

    assert val_ids(0) == val_ids(0) and val_ids(0) != val_ids(1)


def test_plain_idx_files_read_like_gzipped_ones(tmp_path):
    a = FashionMNISTDataModule(root=str(write_dataset(tmp_path / "gz")))
    b = FashionMNISTDataModule(root=str(write_dataset(tmp_path / "plain", gz=False)))
    a.setup("fit")
    b.setup("fit")
    assert torch.equal(a.sets["train"].images, b.sets["train"].images)
    assert torch.equal(a.sets["test"].labels, b.sets["test"].labels)


def test_subsets_are_stratified_and_nested_in_their_split(tmp_path):
    full = FashionMNISTDataModule(root=str(write_dataset(tmp_path, n_train=200)))
    full.setup("fit")
    dm = FashionMNISTDataModule(root=str(tmp_path), max_train=50, max_val=10, max_test=20)
    dm.setup("fit")
    assert [len(dm.sets[s]) for s in ("train", "val", "test")] == [50, 10, 20]
    assert set(dm.sets["train"].ids.tolist()) <= set(full.sets["train"].ids.tolist())
    assert set(dm.sets["val"].ids.tolist()) <= set(full.sets["val"].ids.tolist())
    assert np.bincount(dm.sets["train"].labels.numpy()).tolist() == [5] * 10
    assert np.bincount(dm.sets["val"].labels.numpy()).tolist() == [1] * 10


def test_default_transforms_crop_and_flip_training_images_only(tmp_path):
    dm = FashionMNISTDataModule(root=str(write_dataset(tmp_path)))
    assert [type(t) for t in dm.train_transforms] == [v2.RandomCrop, v2.RandomHorizontalFlip]
    assert dm.train_transforms[0].padding == [2, 2, 2, 2]
    dm.setup("fit")
    torch.manual_seed(0)
    draws = [dm.sets["train"][0]["image"] for _ in range(8)]
    assert any(not torch.equal(draws[0], d) for d in draws[1:])
    assert torch.equal(dm.sets["test"][0]["image"], dm.sets["test"][0]["image"])
    off = FashionMNISTDataModule(root=str(tmp_path), augment=False)
    off.setup("fit")
    assert torch.equal(off.sets["train"][0]["image"], off.sets["train"][0]["image"])


def test_transforms_from_yaml_are_built_as_listed():
    from vecset.pipelines.cli import run_cli

    cli = run_cli(["--config", str(ROOT / "configs" / "fashion_mnist_debug.yaml"), "--trainer.logger=false"], run=False)
    tf = cli.datamodule.train_transforms
    assert [type(t) for t in tf] == [v2.RandomCrop, v2.RandomHorizontalFlip, v2.RandomErasing]
    assert tf[0].size == (28, 28) and tf[0].padding == [2, 2, 2, 2] and tf[2].p == 0.25


def test_the_config_crops_and_flips_whole_batches_of_images_held_in_memory(tmp_path):
    from vecset.pipelines.cli import run_cli
    from vecset.pipelines.data.batch_augment import HorizontalFlip, RandomCrop
    from vecset.pipelines.data.device_loader import DeviceLoader

    root = write_dataset(tmp_path, n_train=300, n_test=50)
    cli = run_cli(["--config", str(ROOT / "configs" / "fashion_mnist.yaml"), "--trainer.logger=false",
                   f"--data.init_args.root={root}"], run=False)
    dm = cli.datamodule
    assert not dm.augment and [type(a) for a in dm.batch_augment] == [RandomCrop, HorizontalFlip]
    assert dm.batch_augment[0].padding == 2 and dm.batch_augment[1].p == 0.5
    dm.setup("fit")
    loader = dm.train_dataloader()
    assert isinstance(loader, DeviceLoader) and loader.tensors["image"].dtype == torch.uint8
    first = next(iter(loader))["image"]
    assert first.shape == (128, 1, 28, 28) and first.dtype == torch.float32


def test_transforms_given_with_augment_off_is_error():
    with pytest.raises(ValueError, match=r"train_transforms is set but augment is false"):
        FashionMNISTDataModule(augment=False, train_transforms=[v2.RandomHorizontalFlip()])


# -- bad input --------------------------------------------------------------------------------

def test_missing_folder_names_the_package_and_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"folder .*nowhere does not exist; install the Debian package "
                                                r"dataset-fashion-mnist .*searched: .*nowhere"):
        FashionMNISTDataModule(root=str(tmp_path / "nowhere")).prepare_data()


def test_missing_file_names_both_names_searched(tmp_path):
    root = write_dataset(tmp_path)
    (root / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(FileNotFoundError, match=r"neither .*t10k-labels-idx1-ubyte.gz nor .*t10k-labels-idx1-ubyte "
                                                r"exists; install the Debian package dataset-fashion-mnist"):
        FashionMNISTDataModule(root=str(root)).setup("fit")


def test_wrong_magic_number_names_the_file(tmp_path):
    root = write_dataset(tmp_path, gz=False)
    # the labels file where the images should be: a valid idx file, of the wrong kind
    (root / "train-images-idx3-ubyte").write_bytes((root / "train-labels-idx1-ubyte").read_bytes())
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte: not an idx images file: magic number "
                                         r"0x00000801, expected 0x00000803"):
        FashionMNISTDataModule(root=str(root)).setup("fit")


def test_truncated_file_names_the_file(tmp_path):
    root = write_dataset(tmp_path)
    data = gzip.decompress((root / "train-images-idx3-ubyte.gz").read_bytes())
    (root / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(data[: len(data) // 2]))
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte.gz: truncated or malformed idx images file"):
        FashionMNISTDataModule(root=str(root)).setup("fit")


def test_truncated_gzip_stream_names_the_file(tmp_path):
    root = write_dataset(tmp_path)
    raw = (root / "t10k-images-idx3-ubyte.gz").read_bytes()
    (root / "t10k-images-idx3-ubyte.gz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match=r"t10k-images-idx3-ubyte.gz: not a complete gzip file"):
        FashionMNISTDataModule(root=str(root)).setup("fit")


def test_image_and_label_counts_must_match(tmp_path):
    root = write_dataset(tmp_path)
    (root / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_labels(np.arange(90) % 10)))
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte.gz holds 100 images but .*train-labels-idx1-ubyte.gz "
                                         r"holds 90 labels"):
        FashionMNISTDataModule(root=str(root)).setup("fit")


def test_label_out_of_range_names_the_file(tmp_path):
    root = write_dataset(tmp_path)
    (root / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_labels(np.full(30, 12))))
    with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte.gz: label 12 is out of range"):
        FashionMNISTDataModule(root=str(root)).setup("fit")


# -- predict on image files -------------------------------------------------------------------

def test_predict_files_are_grey_28x28_and_named(tmp_path):
    Image.new("RGB", (56, 40), (200, 10, 10)).save(tmp_path / "shirt.jpg")
    (tmp_path / "more").mkdir()
    Image.new("L", (28, 28), 255).save(tmp_path / "more" / "a.png")
    dm = FashionMNISTDataModule(root=str(tmp_path / "not-needed"), predict_files=[str(tmp_path / "shirt.jpg"),
                                                                                    str(tmp_path / "more")])
    dm.setup("predict")  # the model and class names do not need the idx files
    assert dm.predict_split() == "predict" and len(dm.sets["predict"]) == 2
    batch = next(iter(dm.predict_dataloader()))
    assert batch["image"].shape == (2, 1, 28, 28) and "y" not in batch
    torch.testing.assert_close(batch["image"][1], torch.full((1, 28, 28), (1.0 - fm.MEAN) / fm.STD))
    assert [dm.describe(int(i)) for i in batch["ids"]] == [str(tmp_path / "shirt.jpg"), str(tmp_path / "more" / "a.png")]


def test_predict_file_errors_name_the_path(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "broken.png").write_bytes(b"not a png")
    for files, match in (([str(tmp_path / "gone.png")], r"predict file .*gone.png does not exist"),
                         ([str(tmp_path / "notes.txt")], r"notes.txt: not an image file"),
                         ([str(tmp_path / "broken.png")], r"broken.png: not a readable image")):
        with pytest.raises((FileNotFoundError, ValueError), match=match):
            FashionMNISTDataModule(root=str(tmp_path), predict_files=files).setup("predict")


# -- the debug config through the CLI ---------------------------------------------------------

def test_cli_fit_and_predict_debug_config(tmp_path, monkeypatch):
    from vecset.pipelines.cli import run_cli

    data = write_dataset(tmp_path / "idx", n_train=600, n_test=120)
    Image.fromarray(learnable(np.array([3]), 5)[0].astype(np.uint8)).save(tmp_path / "dress.png")
    monkeypatch.chdir(tmp_path)
    cfg = str(ROOT / "configs" / "fashion_mnist_debug.yaml")
    run_cli(["fit", "--config", cfg, "--data.init_args.root", str(data)])
    run = tmp_path / "runs" / "fashion_mnist_debug" / "version_0"
    res = json.loads((run / "results.json").read_text())
    # 512 images, 2 epochs of 8 steps: it learns (chance is 0.1)
    assert res["global_steps"] == 16 and res["test"]["test_acc"] >= 0.3
    assert {Path(p).name for p in res["plots"]} >= {"confusion_matrix.png", "attention_maps.png",
                                                    "worst_mistakes.png"}
    # ElapsedTime: minutes beside each validation's accuracy (not at the sanity check)
    import pandas as pd

    curve = pd.read_csv(run / "metrics.csv").dropna(subset=["val_acc"])
    minutes = curve["elapsed_min"].tolist()
    assert len(minutes) == 2 and 0 < minutes[0] < minutes[1] < 5
    run_cli(["predict", "--config", cfg, "--data.init_args.root", str(data), "--data.init_args.predict_files",
             f"[{tmp_path / 'dress.png'}]", "--ckpt_path", res["checkpoint"]])
    with open(tmp_path / "runs" / "fashion_mnist_debug" / "version_1" / "predictions.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1 and rows[0]["input"] == str(tmp_path / "dress.png")
    assert rows[0]["prediction"] in NAMES and 0.1 <= float(rows[0]["probability"]) <= 1.0
