"""Data on the device through ``vecset fit`` (the CPU as the device): the debug Fashion-MNIST
config with ``on_device`` and ``batch_augment`` trains, says where its data is, and a run
stopped in mid-epoch and resumed from its checkpoint sees the uninterrupted run's batches
(the same samples, augmented the same)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytorch_lightning as pl
import torch
import yaml
from test_fashion_mnist import write_dataset

from vecset.pipelines.cli import run_cli
from vecset.pipelines.data.device_loader import DeviceLoader

ROOT = Path(__file__).resolve().parents[3]


class Record(pl.Callback):
    """Per global step: the batch's ids and a checksum of its (augmented) images and labels;
    a checkpoint to ``save`` after step ``save_at`` (as StepCheckpoint writes it)."""

    def __init__(self, save_at: int = -1, save: Path | None = None) -> None:
        self.steps: dict[int, tuple] = {}
        self.save_at, self.save = save_at, save

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        if trainer.global_step == self.save_at:
            trainer.save_checkpoint(self.save, weights_only=False)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        self.steps[trainer.global_step] = (batch["ids"].tolist(), batch["image"].double().sum().item(),
                                           batch["y"].double().sum(0).tolist())


def config(tmp: Path, data: Path) -> Path:
    cfg = yaml.safe_load((ROOT / "configs/fashion_mnist_debug.yaml").read_text())
    cfg["trainer"].update(logger=False, enable_checkpointing=False, num_sanity_val_steps=0, limit_val_batches=1)
    cfg["trainer"]["callbacks"] = []
    d = cfg["data"]["init_args"]
    d.pop("train_transforms")
    d.update(root=str(data), augment=False, placement={"on_device": True}, batch_augment=[
        {"class_path": "vecset.pipelines.data.batch_augment.RandomCrop", "init_args": {"padding": 2}},
        {"class_path": "vecset.pipelines.data.batch_augment.HorizontalFlip"},
        {"class_path": "vecset.pipelines.data.batch_augment.MixUp", "init_args": {"alpha": 0.4}}])
    path = tmp / "fm_device.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def fit(cfg: Path, ckpt: Path | None = None, rec: Record | None = None) -> tuple[pl.Trainer, Record]:
    cli = run_cli(["--config", str(cfg)], run=False)
    rec = rec or Record()
    cli.trainer.callbacks.append(rec)
    cli.trainer.fit(cli.model, cli.datamodule, ckpt_path=str(ckpt) if ckpt else None)
    return cli.trainer, rec


def test_fit_on_device_then_mid_epoch_resume_sees_the_same_batches(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO)
    monkeypatch.chdir(tmp_path)
    cfg = config(tmp_path, write_dataset(tmp_path / "idx", n_train=600, n_test=120))
    ckpt = tmp_path / "mid.ckpt"
    trainer, whole = fit(cfg, rec=Record(save_at=5, save=ckpt))  # 512 images / 64: 2 epochs of 8 steps
    assert isinstance(trainer.train_dataloader, DeviceLoader)
    assert sorted(whole.steps) == list(range(16))
    assert sum(1 for r in caplog.records if "FashionMNISTDataModule: data on cpu" in r.getMessage()) == 1
    epoch0 = [i for s in range(8) for i in whole.steps[s][0]]
    assert len(set(epoch0)) == 512  # every training image once
    assert whole.steps[0] != whole.steps[8]

    assert torch.load(ckpt, weights_only=False)["vecset_resume"]["batches_done"] == 5  # mid-epoch 0
    _, resumed = fit(cfg, ckpt=ckpt)
    assert sorted(resumed.steps) == list(range(5, 16))
    for s in range(5, 16):
        assert resumed.steps[s] == whole.steps[s], s
