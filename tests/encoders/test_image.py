"""Image encoders, image DataModules and their bad-input errors (CPU, tiny)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from vecset.encoders import PatchEncoder, PixelEncoder
from vecset.pipelines import Cifar10DataModule, DigitsDataModule, ImageFolderDataModule
from vecset.pipelines.data.images import digits_split

ROOT = Path(__file__).resolve().parents[2]


# -- encoders ------------------------------------------------------------------------------

def test_pixel_encoder_one_vector_per_pixel():
    torch.manual_seed(0)
    enc = PixelEncoder(in_channels=3, d_model=8, positional="none")
    img = torch.randn(2, 3, 5, 10)  # a 5x10 RGB image is 50 vectors of 3 values
    vs = enc({"image": img})
    assert vs.x.shape == (2, 50, 8) and vs.mask.all()
    # vector r*W + c is the projection of pixel (r, c)
    r, c = 3, 7
    torch.testing.assert_close(vs.x[1, r * 10 + c], enc.proj(img[1, :, r, c]))
    assert vs.pos[0, r * 10 + c].tolist() == [3.0, 7.0]


def test_pixel_encoder_adds_sinusoidal_2d():
    torch.manual_seed(0)
    plain = PixelEncoder(1, 8, positional="none")
    sin = PixelEncoder(1, 8, positional="sinusoidal")
    sin.load_state_dict(plain.state_dict())
    img = torch.randn(1, 1, 4, 6)
    diff = sin({"image": img}).x - plain({"image": img}).x  # (1, 24, 8)
    torch.testing.assert_close(diff[0], sin.positional(4, 6))
    # the first half encodes the row: equal along a row, different between rows
    torch.testing.assert_close(diff[0, 0, :4], diff[0, 5, :4])
    assert not torch.allclose(diff[0, 0, :4], diff[0, 6, :4])


def test_patch_encoder_equals_flattened_patch_projection():
    torch.manual_seed(0)
    enc = PatchEncoder(in_channels=2, d_model=6, patch_size=2, positional="none")
    img = torch.randn(3, 2, 4, 6)
    vs = enc({"image": img})
    assert vs.x.shape == (3, 6, 6)  # (4/2) * (6/2) patches
    # reference: unfold to (B, C*p*p, L) patches, then the same linear map
    patches = torch.nn.functional.unfold(img, kernel_size=2, stride=2).transpose(1, 2)  # (B, 6, 8)
    ref = patches @ enc.proj.weight.reshape(6, -1).T + enc.proj.bias
    torch.testing.assert_close(vs.x, ref)
    assert vs.pos[0, 4].tolist() == [2.0, 2.0]  # patch (1, 1) starts at pixel (2, 2)


def test_patch_encoder_side_not_multiple_is_error_unless_pad():
    img = torch.randn(1, 1, 7, 8)
    with pytest.raises(ValueError, match=r"7x8 is not a multiple of patch_size=2.*pad: true"):
        PatchEncoder(1, 8, 2)({"image": img})
    vs = PatchEncoder(1, 8, 2, pad=True)({"image": img})
    assert vs.x.shape == (1, 16, 8)  # ceil(7/2) * 8/2


def test_image_smaller_than_patch_is_error():
    with pytest.raises(ValueError, match=r"images of 3x8 pixels are smaller than patch_size=4"):
        PatchEncoder(1, 8, 4, pad=True)({"image": torch.zeros(1, 1, 3, 8)})


def test_channel_mismatch_is_error_naming_ids():
    batch = {"image": torch.zeros(2, 3, 8, 8), "ids": torch.tensor([5, 9])}
    with pytest.raises(ValueError, match=r"expects 1-channel images.*has 3 channels \(sample ids \[5, 9\]\)"):
        PixelEncoder(1, 8)(batch)


def test_learned_2d_grid_too_large_is_error():
    enc = PatchEncoder(1, 8, 2, positional="learned", max_h=4, max_w=4)
    assert enc({"image": torch.zeros(1, 1, 8, 8)}).x.shape == (1, 16, 8)
    with pytest.raises(ValueError, match=r"grid of 5x4 positions exceeds the learned 2-D table of 4x4"):
        enc({"image": torch.zeros(1, 1, 10, 8)})


# -- digits --------------------------------------------------------------------------------

def test_digits_pinned_split():
    dm = DigitsDataModule(batch_size=32)
    dm.setup("fit")
    sizes = {k: len(v) for k, v in dm.sets.items()}
    assert sizes == {"train": 1293, "val": 144, "test": 360}
    ids = {k: set(v.tolist()) for k, v in dm.index.items()}
    assert not (ids["train"] & ids["test"]) and not (ids["val"] & ids["test"]) and not (ids["train"] & ids["val"])
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    y = load_digits().target
    _, test = train_test_split(np.arange(len(y)), test_size=0.2, stratify=y, random_state=0)
    assert sorted(test.tolist()) == sorted(ids["test"])
    assert np.bincount(y[dm.index["test"]]).min() >= 35  # stratified: ~36 per class
    batch = next(iter(dm.test_dataloader()))
    assert batch["image"].shape == (32, 1, 8, 8) and batch["image"].min() >= -1 and batch["image"].max() <= 1
    assert dm.describe(int(batch["ids"][0])) == f"load_digits[{int(dm.index['test'][0])}]"


def test_digits_augments_train_only():
    dm = DigitsDataModule(degrees=15.0)
    dm.setup("fit")
    torch.manual_seed(0)
    a, b = dm.sets["train"][0]["image"], dm.sets["train"][0]["image"]
    assert not torch.equal(a, b)  # a fresh random affine each time
    assert torch.equal(dm.sets["test"][0]["image"], dm.sets["test"][0]["image"])
    assert digits_split(np.repeat(np.arange(10), 20))["test"].shape == (40,)


def test_digits_prediction_rows():
    dm = DigitsDataModule()
    rows = dm.prediction_rows([3, 7], {"label": [4, 9], "prob": [0.91, 0.5]})
    assert rows == [{"input": "load_digits[3]", "prediction": "4", "probability": 0.91},
                    {"input": "load_digits[7]", "prediction": "9", "probability": 0.5}]


# -- image folders -------------------------------------------------------------------------

def _write(path: Path, mode: str = "RGB", size=(8, 8), value: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new(mode, size, color=value if mode == "L" else (value, 0, 0)).save(path)


def _folder(root: Path, classes=("cat", "dog"), n: int = 10, mode: str = "RGB") -> Path:
    for k, c in enumerate(classes):
        for i in range(n):
            _write(root / c / f"{i}.png", mode, value=40 * k + i)
    return root


def test_image_folder_single_folder_split(tmp_path):
    dm = ImageFolderDataModule(str(_folder(tmp_path, n=5)), channels=3, val_fraction=0.25, test_fraction=0.2,
                               batch_size=4)
    dm.setup("fit")
    assert dm.class_names == ["cat", "dog"] and dm.num_classes == 2
    assert {k: len(v) for k, v in dm.sets.items()} == {"train": 6, "val": 2, "test": 2}
    batch = next(iter(dm.test_dataloader()))
    assert batch["image"].shape == (2, 3, 8, 8)
    assert dm.describe(int(batch["ids"][0])).startswith(str(tmp_path))
    # pixel (0,0) red channel = 40*class + i, normalized with mean=std=0.5
    path = Path(dm.describe(int(batch["ids"][0])))
    want = (40 * ["cat", "dog"].index(path.parent.name) + int(path.stem)) / 255 / 0.5 - 1
    assert batch["image"][0, 0, 0, 0].item() == pytest.approx(want, abs=1e-6)


def test_image_folder_train_test_subfolders_and_resize(tmp_path):
    _folder(tmp_path / "train", n=4)
    _folder(tmp_path / "test", classes=("dog",), n=2)
    dm = ImageFolderDataModule(str(tmp_path), image_size=[6, 4], val_fraction=0.5)
    dm.setup("fit")
    assert dm.class_names == ["cat", "dog"]
    assert [dm.sets["test"][i]["y"] for i in range(2)] == [1, 1]  # test labels use training's class list
    assert dm.sets["train"][0]["image"].shape == (3, 6, 4)


def test_corrupt_image_is_error(tmp_path):
    _folder(tmp_path)
    (tmp_path / "dog" / "broken.png").write_text("not a png")
    with pytest.raises(ValueError, match=r"dog/broken.png: not a readable image"):
        ImageFolderDataModule(str(tmp_path)).setup("fit")


def test_non_image_file_is_error_or_counted(tmp_path, caplog):
    _folder(tmp_path)
    (tmp_path / "cat" / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match=r"cat/notes.txt: not an image file \(extension '.txt'"):
        ImageFolderDataModule(str(tmp_path)).setup("fit")
    dm = ImageFolderDataModule(str(tmp_path), skip_non_images=True)
    with caplog.at_level("WARNING"):
        dm.setup("fit")
    assert "skipped 1 non-image file(s)" in caplog.text
    assert sum(len(s) for s in dm.sets.values()) == 20


def test_empty_class_folder_is_error(tmp_path):
    _folder(tmp_path)
    (tmp_path / "emu").mkdir()
    with pytest.raises(ValueError, match=r"class folder .*emu is empty"):
        ImageFolderDataModule(str(tmp_path)).setup("fit")


def test_grey_vs_rgb_mismatch_errors_or_converts(tmp_path):
    _folder(tmp_path, mode="L")
    with pytest.raises(ValueError, match=r"cat/0.png: image is grey \(PIL mode 'L'\) but channels=3 \(RGB\).*convert: true"):
        ImageFolderDataModule(str(tmp_path), channels=3).setup("fit")
    dm = ImageFolderDataModule(str(tmp_path), channels=3, convert=True)
    dm.setup("fit")
    img = dm.sets["train"][0]["image"]
    assert img.shape == (3, 8, 8) and torch.equal(img[0], img[1])  # grey copied to R, G, B
    rgb = tmp_path / "rgb"
    _folder(rgb, mode="RGB")
    with pytest.raises(ValueError, match=r"image is RGB \(PIL mode 'RGB'\) but channels=1 \(grey\)"):
        ImageFolderDataModule(str(rgb), channels=1).setup("fit")


def test_class_in_test_not_in_train_is_error(tmp_path):
    _folder(tmp_path / "train")
    _folder(tmp_path / "test", classes=("cat", "emu"), n=2)
    with pytest.raises(ValueError, match=r"test: class folder\(s\) \['emu'\] are not in the training folder"):
        ImageFolderDataModule(str(tmp_path)).setup("fit")


def test_mixed_sizes_need_image_size(tmp_path):
    _folder(tmp_path)
    _write(tmp_path / "cat" / "big.png", size=(16, 16))
    with pytest.raises(ValueError, match=r"images differ in size .*set image_size"):
        ImageFolderDataModule(str(tmp_path)).setup("fit")


def test_image_folder_smaller_than_patch_through_encoder(tmp_path):
    dm = ImageFolderDataModule(str(_folder(tmp_path)), batch_size=2)
    dm.setup("fit")
    with pytest.raises(ValueError, match=r"8x8 pixels are smaller than patch_size=16"):
        PatchEncoder(3, 8, 16)(next(iter(dm.train_dataloader())))


def test_cifar_missing_folder_says_where_it_looked(tmp_path):
    dm = Cifar10DataModule(str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match=r"looked for .*nowhere/cifar-10-batches-py.*never downloads"):
        dm.prepare_data()
    (tmp_path / "cifar-10-batches-py").mkdir()
    with pytest.raises(ValueError, match=r"cifar-10-batches-py: CIFAR-10 files are missing or corrupt"):
        Cifar10DataModule(str(tmp_path)).setup("fit")


# -- the CLI end to end (tiny) ----------------------------------------------------------------

def test_cli_fit_and_predict_digits(tmp_path, monkeypatch):
    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    tiny = ["--trainer.max_epochs", "1", "--trainer.limit_train_batches", "3", "--trainer.limit_val_batches", "1",
            "--trainer.enable_model_summary", "false",
            "--model.init_args.backbone.init_args.depth", "1", "--data.init_args.attention_images", "2"]
    cfg = str(ROOT / "configs" / "digits_pixel.yaml")
    run_cli(["fit", "--config", cfg, *tiny])
    run = tmp_path / "runs" / "digits_pixel" / "version_0"
    res = json.loads((run / "results.json").read_text())
    assert 0.0 <= res["test"]["test_acc"] <= 1.0 and res["global_steps"] == 3
    assert {Path(p).name for p in res["plots"]} >= {"confusion_matrix.png", "attention_maps.png"}
    run_cli(["predict", "--config", cfg, *tiny, "--ckpt_path", str(run / "checkpoints" / "last.ckpt")])
    with open(tmp_path / "runs" / "digits_pixel" / "version_1" / "predictions.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 360 and list(rows[0]) == ["input", "prediction", "probability"]
    assert rows[0]["input"].startswith("load_digits[") and rows[0]["prediction"] in [str(d) for d in range(10)]
    assert 0.1 <= float(rows[0]["probability"]) <= 1.0


def test_cli_image_folder_config(tmp_path, monkeypatch):
    from vecset.pipelines.cli import run_cli

    data = _folder(tmp_path / "imgs", classes=("cat", "dog", "emu"), n=10, mode="L")
    monkeypatch.chdir(tmp_path)
    run_cli(["fit", "--config", str(ROOT / "configs" / "image_folder.yaml"), "--data.init_args.root", str(data),
             "--data.init_args.convert", "true", "--model.init_args.head.init_args.num_outputs", "3",
             "--trainer.max_epochs", "1", "--trainer.limit_train_batches", "1", "--trainer.accelerator", "cpu",
             "--trainer.enable_model_summary", "false", "--model.init_args.backbone.init_args.depth", "1"])
    res = json.loads((tmp_path / "runs" / "image_folder" / "version_0" / "results.json").read_text())
    assert res["global_steps"] == 1 and 0.0 <= res["test"]["test_acc"] <= 1.0
    # the head must match the number of class folders
    with pytest.raises(ValueError, match=r"the head predicts 2 classes but the data has 3"):
        run_cli(["fit", "--config", str(ROOT / "configs" / "image_folder.yaml"), "--data.init_args.root", str(data),
                 "--data.init_args.convert", "true", "--trainer.max_epochs", "1", "--trainer.accelerator", "cpu"])


def test_cli_cifar10_config_without_data(tmp_path, monkeypatch):
    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"CIFAR-10 not found: looked for .*missing/cifar-10-batches-py"):
        run_cli(["fit", "--config", str(ROOT / "configs" / "cifar10.yaml"), "--data.init_args.root", "missing",
                 "--trainer.accelerator", "cpu"])
