"""bench/image_folder_check.py: the ImageFolder set it writes holds the Fashion-MNIST images it
drew, one folder a class, and ImageFolderDataModule reads it back with those labels; its patch
variant puts 4x4 patches in the config's encoder slot."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from vecset.pipelines.images.options import FolderSplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "pipelines" / "data"))

from test_fashion_mnist import write_dataset  # noqa: E402

from bench import image_folder_check as ifc  # noqa: E402


def test_writes_the_drawn_images_one_folder_a_class(tmp_path):
    from vecset.pipelines.images.fashion_mnist import class_names, find_files, read_split

    fm = write_dataset(tmp_path / "fm", n_train=60, n_test=20)
    counts = ifc.write_folder(tmp_path / "set", str(fm), per_class=2)
    assert counts == {"train": 20, "test": 20}
    folders = sorted(p.name for p in (tmp_path / "set" / "train").iterdir())
    assert folders == sorted(n.replace("/", "-") for n in class_names()) and "T-shirt-top" in folders
    images, labels = read_split(*find_files(fm)["train"])
    for png in (tmp_path / "set" / "train").rglob("*.png"):  # the file's pixels are the idx image's
        i = int(png.stem)
        assert png.parent.name == class_names()[int(labels[i])].replace("/", "-")
        np.testing.assert_array_equal(np.asarray(Image.open(png)), images[i, 0].numpy())
    # the same draw every time: a finished run's folder can be rebuilt for --runs
    again = ifc.write_folder(tmp_path / "again", str(fm), per_class=2)
    assert again == counts and sorted(p.name for p in (tmp_path / "again" / "train").rglob("*.png")) == sorted(
        p.name for p in (tmp_path / "set" / "train").rglob("*.png"))


def test_the_config_reads_the_folder_as_rgb_with_its_classes(tmp_path):
    from vecset.pipelines import ImageFolderDataModule

    fm = write_dataset(tmp_path / "fm", n_train=60, n_test=20)
    ifc.write_folder(tmp_path / "set", str(fm), per_class=2)
    dm = ImageFolderDataModule(str(tmp_path / "set"), channels=3, convert=True, image_size=[32, 32], batch_size=4, split=FolderSplit(val_fraction=0.5))
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    assert batch["image"].shape == (4, 3, 32, 32) and len(dm.class_names) == 10
    # grey converted to RGB: the three channels are equal
    torch.testing.assert_close(batch["image"][:, 0], batch["image"][:, 2])


def test_the_patch_variant_swaps_the_encoder_only(tmp_path, monkeypatch):
    from vecset.encoders import ConvTokenizer, PatchEncoder
    from vecset.pipelines.cli import run_cli

    fm = write_dataset(tmp_path / "fm", n_train=60, n_test=20)
    ifc.write_folder(tmp_path / "set", str(fm), per_class=2)
    monkeypatch.chdir(tmp_path)
    built = {}
    for key, (_, extra) in ifc.VARIANTS.items():
        cli = run_cli(["--config", str(ROOT / ifc.CONFIG), *ifc.fit_args(tmp_path / "set", 1, 0, extra)], run=False)
        built[key] = (type(cli.model.encoder), cli.model.backbone.d_model, len(cli.model.encoder(
            {"image": torch.zeros(1, 3, 32, 32)}).x[0]))
    assert built == {"patches": (PatchEncoder, 128, 64), "cct": (ConvTokenizer, 128, 64)}


def test_runs_of_an_unknown_variant_is_an_error(capsys):
    with pytest.raises(SystemExit):
        ifc.main(["--runs", "resnet=runs/x"])
    assert "--runs: unknown variant(s) ['resnet']" in capsys.readouterr().err


def test_a_run_without_results_json_is_read_from_its_metrics(tmp_path):
    run = tmp_path / "version_0"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "best-epoch001-val_acc0.7000.ckpt").touch()
    (run / "metrics.csv").write_text("epoch,step,test_acc,val_acc\n0,10,,0.5\n1,20,,0.7\n2,30,,0.6\n3,31,0.65,\n")
    out = ifc.run_summary(run)
    assert out["best_val"] == 0.7 and out["test"] == {"test_acc": 0.65} and out["epochs"] == 3
    assert out["wall_seconds"] is None and out["checkpoint"].endswith("best-epoch001-val_acc0.7000.ckpt")
    (run / "metrics.csv").write_text("epoch,step,test_acc,val_acc\n0,10,,0.5\n")  # stopped before its test
    with pytest.raises(SystemExit, match="one test accuracy"):
        ifc.run_summary(run)
