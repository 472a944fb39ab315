"""Image encoders, image DataModules and their bad-input errors (CPU, tiny)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from PIL import Image
from torch import Tensor

from vecset.backbone import Backbone
from vecset.encoders import PatchEncoder, PixelEncoder
from vecset.heads import SequenceHead
from vecset.pipelines import Cifar10DataModule, DigitsDataModule, ImageFolderDataModule, TaskModule
from vecset.pipelines.images.digits import digits_split
from vecset.pipelines.images.options import FolderSplit

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
    dm = ImageFolderDataModule(str(_folder(tmp_path, n=5)), channels=3, batch_size=4, split=FolderSplit(val_fraction=0.25, test_fraction=0.2))
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
    dm = ImageFolderDataModule(str(tmp_path), image_size=[6, 4], split=FolderSplit(val_fraction=0.5))
    dm.setup("fit")
    assert dm.class_names == ["cat", "dog"]
    assert [dm.sets["test"][i]["y"] for i in range(2)] == [1, 1]  # test labels use training's class list
    assert dm.sets["train"][0]["image"].shape == (3, 6, 4)


def test_the_first_test_images_are_read_and_batched_in_one_reader_call(tmp_path, monkeypatch):
    """``test_batch(n)``, the images a report shows: an image folder's reader dataset reads and
    batches its first ``n`` test images in one call (``FileImages.first_batch``); in-memory images
    (digits) are their first items collated. All of them when there are fewer, None for none."""
    from vecset.encoders.image import FileImages, collate_images

    _folder(tmp_path / "train", n=4)
    _folder(tmp_path / "test", n=3)
    dm = ImageFolderDataModule(str(tmp_path), split=FolderSplit(val_fraction=0.5))
    dm.setup("test")
    calls: list[int] = []
    real = FileImages.first_batch
    monkeypatch.setattr(FileImages, "first_batch", lambda self, n: calls.append(n) or real(self, n))
    batch, want = dm.test_batch(2), collate_images([dm.sets["test"][i] for i in range(2)])
    assert calls == [2] and list(batch) == list(want) and all(torch.equal(batch[k], want[k]) for k in want)
    assert batch["image"].shape == (2, 3, 8, 8) and batch["y"].tolist() == [0, 0]
    assert dm.test_batch(10)["ids"].tolist() == [int(dm.sets["test"][i]["id"]) for i in range(6)]
    assert dm.test_batch(0) is None
    digits = DigitsDataModule()
    digits.setup("test")
    batch, want = digits.test_batch(3), collate_images([digits.sets["test"][i] for i in range(3)])
    assert all(torch.equal(batch[k], want[k]) for k in want) and batch["image"].shape[0] == 3


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


# -- pixel depth: 8-bit, 16-bit and float files --------------------------------------------------

def _png16(path: Path, pixels: np.ndarray) -> None:
    """A 16-bit PNG written by hand (Pillow cannot write 16-bit RGB): (H, W) grey or (H, W, 3) RGB
    uint16 samples, big-endian, filter 0 on every row (PNG spec, sections 11.2.2 and 7.3)."""
    import struct
    import zlib

    h, w = pixels.shape[:2]
    colour = 0 if pixels.ndim == 2 else 2
    raw = b"".join(b"\x00" + pixels[r].astype(">u2").tobytes() for r in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, colour, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _deep_folder(root: Path, write, n: int = 5) -> Path:
    """Two classes of n images each; ``write(path, k)`` writes image k (0 .. 2n-1). Split with
    ``SPLIT`` (2 of each class in val and test)."""
    for k in range(2 * n):
        write(root / ("cat" if k < n else "dog") / f"{k}.png", k)
    return root


def _all_images(dm: ImageFolderDataModule) -> dict[str, Tensor]:
    """file name -> the (C, H, W) model input the data module makes of it."""
    return {Path(dm.describe(ds.ids[i])).name: ds[i]["image"] for ds in dm.sets.values() for i in range(len(ds))}


SPLIT = {"split": FolderSplit(val_fraction=0.2, test_fraction=0.2)}
GRADIENT16 = (np.arange(64, dtype=np.uint16).reshape(8, 8) * 1000)  # 0 .. 63000 of 65535


def test_16bit_grey_png_is_scaled_by_its_range(tmp_path):
    def write(path, k):
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(GRADIENT16 + k).save(path)

    root = _deep_folder(tmp_path, write)
    with Image.open(root / "cat" / "0.png") as im:
        assert im.mode == "I;16"
    dm = ImageFolderDataModule(str(root), channels=1, **SPLIT)
    dm.setup("fit")
    for name, img in _all_images(dm).items():
        want = torch.from_numpy((GRADIENT16 + int(Path(name).stem)) / 65535.0).float()[None] / 0.5 - 1
        torch.testing.assert_close(img, want, atol=1e-6, rtol=0)
    # grey to RGB (convert: true) copies the 16-bit values into the three channels
    dm = ImageFolderDataModule(str(root), channels=3, convert=True, **SPLIT)
    dm.setup("fit")
    img = _all_images(dm)["0.png"]
    torch.testing.assert_close(img, (torch.from_numpy(GRADIENT16 / 65535.0).float() / 0.5 - 1).expand(3, 8, 8),
                               atol=1e-6, rtol=0)


def test_16bit_rgb_png_keeps_its_16_bits(tmp_path):
    rgb = np.stack([GRADIENT16, GRADIENT16[::-1], np.full((8, 8), 40001, np.uint16)], -1)  # (8, 8, 3)
    root = _deep_folder(tmp_path, lambda path, k: _png16(path, rgb + k))
    dm = ImageFolderDataModule(str(root), channels=3, **SPLIT)
    dm.setup("fit")
    for name, img in _all_images(dm).items():
        want = torch.from_numpy((rgb + int(Path(name).stem)) / 65535.0).float().permute(2, 0, 1) / 0.5 - 1
        torch.testing.assert_close(img, want, atol=1e-6, rtol=0)  # 8 bits would be off by up to 1/255
    # RGB to grey (convert: true): ITU-R 601-2 luma of the 16-bit values (torchvision's coefficients)
    dm = ImageFolderDataModule(str(root), channels=1, convert=True, **SPLIT)
    dm.setup("fit")
    luma = torch.from_numpy(rgb / 65535.0).float() @ torch.tensor([0.2989, 0.587, 0.114])
    torch.testing.assert_close(_all_images(dm)["0.png"], luma[None] / 0.5 - 1, atol=1e-5, rtol=0)


def test_16bit_pgm_is_scaled_by_its_range(tmp_path):
    def write(path, k):
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(GRADIENT16 + k).save(path.with_suffix(".pgm"))

    root = _deep_folder(tmp_path, write)
    with Image.open(root / "cat" / "0.pgm") as im:
        assert im.mode == "I"  # Pillow reads 16-bit PGM as 32-bit integers
    dm = ImageFolderDataModule(str(root), channels=1, **SPLIT)
    dm.setup("fit")
    want = torch.from_numpy(GRADIENT16 / 65535.0).float()[None] / 0.5 - 1
    torch.testing.assert_close(_all_images(dm)["0.pgm"], want, atol=1e-6, rtol=0)


def test_float_tiff_is_taken_as_it_is_and_resized(tmp_path):
    ramp = np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8)

    def write(path, k):
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(ramp if k else np.full((8, 8), 0.3, np.float32)).save(path.with_suffix(".tif"))

    root = _deep_folder(tmp_path, write)
    with Image.open(root / "cat" / "1.tif") as im:
        assert im.mode == "F"
    dm = ImageFolderDataModule(str(root), channels=1, **SPLIT)
    dm.setup("fit")
    images = _all_images(dm)
    torch.testing.assert_close(images["1.tif"], torch.from_numpy(ramp)[None] / 0.5 - 1, atol=1e-6, rtol=0)
    dm = ImageFolderDataModule(str(root), channels=1, image_size=4, **SPLIT)
    dm.setup("fit")
    torch.testing.assert_close(_all_images(dm)["0.tif"], torch.full((1, 4, 4), 0.3 / 0.5 - 1), atol=1e-6, rtol=0)


def test_non_finite_pixel_is_error_naming_the_file(tmp_path):
    def write(path, k):
        path.parent.mkdir(parents=True, exist_ok=True)
        a = np.full((8, 8), 0.5, np.float32)
        if k == 7:
            a[2, 3] = np.nan
            a[5, 1] = np.inf
        Image.fromarray(a).save(path.with_suffix(".tif"))

    dm = ImageFolderDataModule(str(_deep_folder(tmp_path, write)), channels=1, **SPLIT)
    dm.setup("fit")
    with pytest.raises(ValueError, match=r"dog/7.tif: 2 of 64 pixels are not finite \(NaN or inf\); the first at "
                                         r"row 2, column 3"):
        _all_images(dm)


def test_32bit_integer_image_is_error_naming_the_file(tmp_path):
    def write(path, k):
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full((8, 8), 70000 * k, np.int32)).save(path.with_suffix(".tif"))

    with pytest.raises(ValueError, match=r"cat/0.tif: PIL mode 'I' \(32-bit integer pixels\) has no fixed range"):
        ImageFolderDataModule(str(_deep_folder(tmp_path, write)), channels=1, **SPLIT).setup("fit")


def test_check_image_reads_the_header_only_and_names_the_file(tmp_path):
    from vecset.encoders.image import FileImages, check_image, check_images, image_channels

    Image.new("L", (5, 3)).save(tmp_path / "grey.png")
    Image.new("RGBA", (4, 4)).save(tmp_path / "rgba.png")
    Image.fromarray(np.full((8, 8), 70000, np.int32)).save(tmp_path / "int32.tif")
    assert check_image(tmp_path / "grey.png") == (5, 3)  # (W, H); no channels asked: any mode
    assert [image_channels(m) for m in ("L", "I;16", "RGB", "RGBA", "P")] == [1, 1, 3, None, None]
    with pytest.raises(ValueError, match=r"rgba.png: image is mode RGBA \(PIL mode 'RGBA'\) but channels=3"):
        check_image(tmp_path / "rgba.png", channels=3, convert=False)
    assert check_image(tmp_path / "rgba.png", channels=3, convert=True) == (4, 4)
    with pytest.raises(ValueError, match=r"int32.tif: PIL mode 'I' \(32-bit integer pixels\)"):
        check_image(tmp_path / "int32.tif")
    paths = [tmp_path / "grey.png", tmp_path / "rgba.png", tmp_path / "grey.png"]
    assert check_images(paths) == {(5, 3): paths[0], (4, 4): paths[1]}
    item = FileImages(paths[:2], [0, 1], [7, 8], 3, lambda im: im)[1]
    assert item["image"].shape == (3, 4, 4) and item["image"].dtype == torch.uint8 and (item["id"], item["y"]) == (8, 1)


def test_a_32bit_integer_predict_file_is_refused_at_setup(tmp_path):
    from vecset.pipelines.images.data import list_predict_files

    Image.fromarray(np.full((8, 8), 70000, np.int32)).save(tmp_path / "int32.tif")
    with pytest.raises(ValueError, match=r"int32.tif: PIL mode 'I' \(32-bit integer pixels\) has no fixed range"):
        list_predict_files([str(tmp_path)])


@pytest.mark.parametrize("mode,channels", [("L", 1), ("RGB", 3)])
def test_8bit_images_read_as_before(tmp_path, mode, channels):
    rng = np.random.default_rng(0)

    def write(path, k):
        path.parent.mkdir(parents=True, exist_ok=True)
        shape = (8, 6) if mode == "L" else (8, 6, 3)
        Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode).save(path)

    root = _deep_folder(tmp_path, write)
    dm = ImageFolderDataModule(str(root), channels=channels, image_size=[5, 4], **SPLIT)
    dm.setup("fit")
    # the reference: PIL image -> uint8 tensor -> resize -> / 255 -> normalize (torchvision)
    from torchvision.transforms import v2

    ref = v2.Compose([v2.ToImage(), v2.Resize([5, 4], antialias=True), v2.ToDtype(torch.float32, scale=True),
                      v2.Normalize([0.5] * channels, [0.5] * channels)])
    for name, img in _all_images(dm).items():
        with Image.open(root / ("cat" if int(Path(name).stem) < 5 else "dog") / name) as im:
            assert torch.equal(img, ref(im))
    with Image.open(root / "cat" / "0.png") as im:
        pixel = np.array(im)[0, 0]
    unresized = ImageFolderDataModule(str(root), channels=channels, **SPLIT)
    unresized.setup("fit")
    want = torch.as_tensor(pixel, dtype=torch.float32).reshape(-1) / 255 / 0.5 - 1
    torch.testing.assert_close(_all_images(unresized)["0.png"][:, 0, 0], want, atol=1e-6, rtol=0)


# -- sets too large for the attention ------------------------------------------------------------

class _NoStep(pl.Callback):
    """Fails the test if any batch reaches a step (sanity check, training or evaluation)."""

    def on_train_batch_start(self, *args) -> None:
        raise AssertionError("a training step started")

    def on_validation_batch_start(self, *args) -> None:
        raise AssertionError("a validation step started")

    def on_test_batch_start(self, *args) -> None:
        raise AssertionError("a test step started")


def _big_folder(root: Path, side: int) -> Path:
    for k in range(10):
        _write(root / ("cat" if k < 5 else "dog") / f"{k}.png", "L", size=(side, side))
    return root


def _fit(model: TaskModule, dm, stage: str = "fit") -> None:
    trainer = pl.Trainer(max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, callbacks=[_NoStep()])
    trainer.fit(model, datamodule=dm) if stage == "fit" else trainer.predict(model, datamodule=dm)


def test_full_size_images_too_large_for_attention_are_refused_before_a_step(tmp_path, monkeypatch):
    monkeypatch.setattr("vecset.pipelines.training.set_size.available_memory", lambda device: 8 * 2**30)
    dm = ImageFolderDataModule(str(_big_folder(tmp_path, 1024)), channels=1, image_size=None, batch_size=2, **SPLIT)
    model = TaskModule(PixelEncoder(1, 8), Backbone(8, depth=1, heads=2), SequenceHead(8, 2))
    # one 1024x1024 image is 1048576 pixel vectors: a batch of 2 holds 2 x 2 x N x N float32 weights, 16384 GiB
    want = (r"ImageFolderDataModule's images of 1024x1024 pixels make sets of 1048576 vectors \(PixelEncoder: a "
            r"1024x1024 grid\); full attention over a batch of 2 sets holds 2 x 2 x 1048576 x 1048576 weights "
            r"\(batch x heads x N x N, float32\), about 16384.0 GiB, but 8.0 GiB is free on cpu\. At most 23170 "
            r"vectors a set fit at batch_size 2: set the data's image_size \(e\.g\. \[152, 152\]\), a smaller "
            r"batch_size, larger patches \(PatchEncoder's patch_size\), or truncated attention \(the backbone's "
            r"window\)")
    for stage in ("fit", "predict"):
        with pytest.raises(MemoryError, match=want):
            _fit(model, dm, stage)
    from vecset.pipelines.training.multitask import MultiTaskDataModule, MultiTaskModule

    multi = MultiTaskModule(Backbone(8, depth=1, heads=2), {"img": PixelEncoder(1, 8)}, {"img": SequenceHead(8, 2)})
    with pytest.raises(MemoryError, match="task 'img': " + want):
        _fit(multi, MultiTaskDataModule({"img": dm}))
    # patches: 1024/16 = 64 per side, 4096 vectors, 2 x 4096^2 x 4 bytes = 0.125 GiB: no refusal
    # (the step then runs, which _NoStep reports)
    small = TaskModule(PatchEncoder(1, 8, 16), Backbone(8, depth=1, heads=2), SequenceHead(8, 2))
    with pytest.raises(AssertionError, match="step started"):
        _fit(small, dm)


def test_set_size_check_counts_patches_cls_and_window(tmp_path, monkeypatch):
    monkeypatch.setattr("vecset.pipelines.training.set_size.available_memory", lambda device: 2**30)
    dm = ImageFolderDataModule(str(_big_folder(tmp_path, 1024)), channels=1, batch_size=2, **SPLIT)
    # 4x4 patches: 256x256 = 65536 vectors, + CLS; 2 x 4 x 65537^2 x 4 bytes = 128 GiB
    cls = TaskModule(PatchEncoder(1, 8, 4), Backbone(8, depth=1, heads=4, cls_token=True),
                     SequenceHead(8, 2, pooling="cls"))
    with pytest.raises(MemoryError, match=r"sets of 65537 vectors \(PatchEncoder: a 256x256 "
                                          r"grid, plus the CLS vector\); full attention over a batch of 2 sets holds "
                                          r"2 x 4 x 65537 x 65537 weights \(batch x heads x N x N, float32\), about "
                                          r"128.0 GiB, but 1.0 GiB is free on cpu\. At most 5792 vectors a set fit at "
                                          r"batch_size 2: set the data's image_size \(e\.g\. \[304, 304\]\)"):
        _fit(cls, dm)
    # truncated attention: each vector sees 3 x window keys at most (the blocked path): 2 x 4 x 65536 x 48 x 4 bytes
    windowed = TaskModule(PatchEncoder(1, 8, 4), Backbone(8, depth=1, heads=4, window=16), SequenceHead(8, 2))
    with pytest.raises(AssertionError, match="step started"):
        _fit(windowed, dm)
    monkeypatch.setattr("vecset.pipelines.training.set_size.available_memory", lambda device: 2**20)
    with pytest.raises(MemoryError, match=r"truncated attention \(window 16\) over a batch of 2 sets holds 2 x 4 x "
                                          r"65536 x 48 weights \(batch x heads x N x 3 window, float32\), about 96.0 "
                                          r"MiB, but 1.0 MiB is free on cpu\. At most 682 vectors a set fit at "
                                          r"batch_size 2: set the data's image_size \(e\.g\. \[104, 104\]\)"):
        _fit(windowed, dm)


def test_set_size_check_counts_the_batch_and_its_suggestion_fits(monkeypatch):
    """640x640 images in 8x8 patches (6400 vectors) in batches of 64: one set's weights (0.6 GiB)
    fit in 8 GiB, the batch's (39 GiB) do not. The suggested image size passes the same check."""
    from vecset.pipelines.data.base import VecsetDataModule
    from vecset.pipelines.training.set_size import check_set_size

    def images(shape, batch_size):  # what the data module contract declares: image_shape, batch_size
        dm = VecsetDataModule()
        dm.image_shape, dm.batch_size = shape, batch_size
        return dm

    monkeypatch.setattr("vecset.pipelines.training.set_size.available_memory", lambda device: 8 * 2**30)
    enc, bb = PatchEncoder(3, 8, 8), Backbone(8, depth=1, heads=4)
    dm = images((3, 640, 640), 64)
    with pytest.raises(MemoryError, match=r"over a batch of 64 sets holds 64 x 4 x 6400 x 6400 weights .* about "
                                          r"39.1 GiB, but 8.0 GiB is free on cpu\. At most 2896 vectors a set fit at "
                                          r"batch_size 64: set the data's image_size \(e\.g\. \[424, 424\]\)") as e:
        check_set_size(enc, bb, dm, torch.device("cpu"))
    side = int(str(e.value).split("(e.g. [")[1].split(",")[0])
    check_set_size(enc, bb, images((3, side, side), 64), torch.device("cpu"))
    with pytest.raises(MemoryError):  # 8 pixels more a side: one more row of patches does not fit
        check_set_size(enc, bb, images((3, side + 8, side + 8), 64),
                       torch.device("cpu"))
    check_set_size(enc, bb, images((3, 640, 640), 12), torch.device("cpu"))


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
            "--model.init_args.backbone.init_args.depth", "1"]
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


def test_cli_image_folder_config(tmp_path, monkeypatch, capsys):
    from vecset.pipelines.cli import run_cli

    data = _folder(tmp_path / "imgs", classes=("cat", "dog", "emu"), n=10, mode="L")
    monkeypatch.chdir(tmp_path)
    # the head's num_outputs follows the class folders (a linked value: the config gives none)
    cli = run_cli(["fit", "--config", str(ROOT / "configs" / "image_folder.yaml"), "--data.init_args.root", str(data),
                   "--data.init_args.convert", "true",
                   "--trainer.max_epochs", "1", "--trainer.limit_train_batches", "1", "--trainer.accelerator", "cpu",
                   "--trainer.enable_model_summary", "false", "--model.init_args.backbone.init_args.depth", "1"])
    assert cli.model.head.num_outputs == 3
    res = json.loads((tmp_path / "runs" / "image_folder" / "version_0" / "results.json").read_text())
    assert res["global_steps"] == 1 and 0.0 <= res["test"]["test_acc"] <= 1.0
    # another count given for the head: one line naming both, before anything runs
    with pytest.raises(SystemExit):
        run_cli(["fit", "--config", str(ROOT / "configs" / "image_folder.yaml"), "--data.init_args.root", str(data),
                 "--model.init_args.head.init_args.num_outputs", "2", "--trainer.accelerator", "cpu"])
    assert capsys.readouterr().err.startswith(
        f"error: class count given twice: model.init_args.head.init_args.num_outputs=2 but data.init_args.root={data} "
        f"(3 class folders in {data}); give it once, at data.init_args.root")


def test_cli_cifar10_config_without_data(tmp_path, monkeypatch, capsys):
    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:  # the data error's one line, exit 2
        run_cli(["fit", "--config", str(ROOT / "configs" / "cifar10.yaml"), "--data.init_args.root", "missing",
                 "--trainer.accelerator", "cpu"])
    assert e.value.code == 2
    assert re.match(r"error: CIFAR-10 not found: looked for .*missing/cifar-10-batches-py", capsys.readouterr().err)


# -- the convolutional stem ------------------------------------------------------------------

def test_conv_stem_keeps_the_grid_and_feeds_the_patches():
    torch.manual_seed(0)
    enc = PatchEncoder(1, 16, 4, stem_channels=[8, 12])
    vs = enc({"image": torch.randn(3, 1, 28, 28)})
    assert vs.x.shape == (3, 49, 16) and enc.grid(28, 28) == (7, 7)
    assert enc.proj.in_channels == 12 and [m.out_channels for m in enc.stem if isinstance(m, torch.nn.Conv2d)] == [8, 12]
    # the stem's output is what the patches are cut from
    enc.eval()
    img = torch.randn(2, 1, 28, 28)
    feats = enc.stem(img)
    assert feats.shape == (2, 12, 28, 28)
    ref = enc.proj(feats).flatten(2).transpose(1, 2) + enc.positional(7, 7, img.device)
    torch.testing.assert_close(enc({"image": img}).x, ref)
    padded = PatchEncoder(1, 16, 4, pad=True, stem_channels=[8])({"image": torch.randn(1, 1, 30, 30)})
    assert padded.x.shape == (1, 64, 16)  # ceil(30/4)^2
    with pytest.raises(ValueError, match=r"stem_channels must be >= 1 each"):
        PatchEncoder(1, 16, 4, stem_channels=[8, 0])


def test_strided_stem_downsamples_and_places_the_patches_in_pixels():
    torch.manual_seed(0)
    enc = PatchEncoder(1, 16, 1, stem_channels=[8, 12, 16], stem_strides=[1, 2, 2])
    enc.eval()
    img = torch.randn(2, 1, 28, 28)
    feats = enc.stem(img)
    assert feats.shape == (2, 16, 7, 7)  # 28 -> 28 -> 14 -> 7
    assert [m.stride for m in enc.stem if isinstance(m, torch.nn.Conv2d)] == [(1, 1), (2, 2), (2, 2)]
    vs = enc({"image": img})
    assert vs.x.shape == (2, 49, 16) and enc.grid(28, 28) == (7, 7)
    ref = enc.proj(feats).flatten(2).transpose(1, 2) + enc.positional(7, 7, img.device)
    torch.testing.assert_close(vs.x, ref)
    # each vector covers 4x4 pixels: positions are its top-left pixel, as for patch_size 4
    torch.testing.assert_close(vs.pos[0], PatchEncoder(1, 16, 4)({"image": img}).pos[0])
    # a side that is not a multiple of patch x strides is refused, or padded with pad: true
    with pytest.raises(ValueError, match=r"30x30 is not a multiple of patch_size x the stem's strides = 1 x 4 = 4"):
        enc({"image": torch.randn(1, 1, 30, 30)})
    padded = PatchEncoder(1, 16, 2, pad=True, stem_channels=[8], stem_strides=[2])
    assert padded({"image": torch.randn(1, 1, 30, 30)}).x.shape == (1, 64, 16) and padded.grid(30, 30) == (8, 8)
    with pytest.raises(ValueError, match=r"one stride per stem convolution: 2 channels \[8, 8\] but 1 strides \[2\]"):
        PatchEncoder(1, 16, 1, stem_channels=[8, 8], stem_strides=[2])
    with pytest.raises(ValueError, match=r"stem_strides must each be 1 or 2, got \[1, 3\]"):
        PatchEncoder(1, 16, 1, stem_channels=[8, 8], stem_strides=[1, 3])


def test_no_stem_by_default_leaves_the_encoder_as_it_was():
    torch.manual_seed(0)
    enc = PatchEncoder(1, 8, 2)
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(1, 8, kernel_size=2, stride=2)
    assert list(enc.state_dict()) == ["proj.weight", "proj.bias"]  # old checkpoints load as they are
    assert torch.equal(enc.proj.weight, conv.weight)  # the same seeded initialization
    assert isinstance(enc.stem, torch.nn.Identity)


# -- training transforms ---------------------------------------------------------------------

def test_folder_augment_keeps_its_default_list_and_takes_a_configured_one(tmp_path):
    from torchvision.transforms import v2

    root = _folder(tmp_path / "imgs", n=10, mode="L")
    default = ImageFolderDataModule(str(root), channels=1, augment=True)
    assert [type(t) for t in default.train_transforms] == [v2.RandomHorizontalFlip, v2.RandomAffine]
    assert default.train_transforms[1].degrees == [-10.0, 10.0] and default.train_transforms[1].translate == (0.1, 0.1)
    mine = ImageFolderDataModule(str(root), channels=1, augment=True,
                                 train_transforms=[v2.RandomAffine(degrees=5)])
    mine.setup("fit")
    steps = [type(t) for t in mine.sets["train"].transform.transforms]
    assert steps == [v2.ToImage, v2.RandomAffine, v2.ToDtype, v2.Normalize]  # no flip: digits, text
    assert [type(t) for t in mine.sets["val"].transform.transforms] == [v2.ToImage, v2.ToDtype, v2.Normalize]
    with pytest.raises(ValueError, match=r"train_transforms is set but augment is false"):
        ImageFolderDataModule(str(root), train_transforms=[v2.RandomAffine(degrees=5)])


def test_digits_default_affine_is_unchanged_and_replaceable():
    from torchvision.transforms import v2

    dm = DigitsDataModule()
    tf = dm.train_transforms
    assert isinstance(tf, v2.RandomAffine) and tf.degrees == [-10.0, 10.0] and tf.scale == (0.9, 1.1)
    dm.setup("fit")
    torch.manual_seed(0)
    a = dm.sets["train"][0]["image"]
    torch.manual_seed(0)
    ref = v2.RandomAffine(degrees=10.0, translate=(0.1, 0.1), scale=(0.9, 1.1),
                          interpolation=v2.InterpolationMode.BILINEAR, fill=-1.0)(dm.sets["train"].images[0])
    torch.testing.assert_close(a, ref)  # the same draw as the affine digits always used
    flip = DigitsDataModule(train_transforms=[v2.RandomHorizontalFlip(p=1.0)])
    flip.setup("fit")
    torch.testing.assert_close(flip.sets["train"][0]["image"], flip.sets["train"].images[0].flip(-1))


def test_image_folder_predict_files_resized_and_named(tmp_path, monkeypatch):
    root = _folder(tmp_path / "imgs", n=10, mode="L")
    _write(tmp_path / "new" / "x.png", "RGB", size=(16, 12), value=200)
    dm = ImageFolderDataModule(str(root), channels=1, convert=True, predict_files=[str(tmp_path / "new")])
    dm.setup("predict")
    batch = next(iter(dm.predict_dataloader()))
    assert dm.predict_split() == "predict" and batch["image"].shape == (1, 1, 8, 8) and "y" not in batch
    assert dm.describe(int(batch["ids"][0])) == str(tmp_path / "new" / "x.png")
