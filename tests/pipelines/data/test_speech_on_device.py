"""Speech frames on the device (``speech/device.py``) on the CPU as the device: the classic
collate's batches, every utterance once an epoch in a seeded order, exact mid-epoch resume
(order and SpecAugment masks), SpecAugment's per-utterance masks, the options' errors, and a
``vecset fit`` of the speech debug config with its frames on the device."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from vecset.pipelines import SpeechFramesDataModule
from vecset.pipelines.cli import run_cli
from vecset.pipelines.data.batch_augment import SpecAugment
from vecset.pipelines.data.options import BucketedPlacement
from vecset.pipelines.speech.device import SpeechDeviceLoader
from vecset.pipelines.speech.options import SpeechAugment, SpeechSplits

ROOT = Path(__file__).resolve().parents[3]
N_UTT, BS = 10, 4


def module(**kw) -> SpeechFramesDataModule:
    dm = SpeechFramesDataModule(root=str(ROOT / "data/speech"), batch_size=BS, splits=SpeechSplits(max_utterances=N_UTT), **kw)
    dm.setup("fit")
    return dm


@pytest.fixture(scope="module")
def classic() -> SpeechFramesDataModule:
    return module()


def test_evaluation_batches_equal_the_classic_collate(classic):
    device = module(placement=BucketedPlacement(on_device=True)).val_dataloader()
    assert isinstance(device, SpeechDeviceLoader) and not isinstance(classic.val_dataloader(), SpeechDeviceLoader)
    pairs = list(zip(device, classic.val_dataloader(), strict=True))
    assert pairs and any(b["padded"] for _, b in pairs)
    for a, b in pairs:
        assert set(a) == set(b) and a["padded"] == b["padded"]
        for k in ("x", "mask", "y", "ids"):
            assert a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]), k


def test_every_utterance_once_an_epoch_in_a_seeded_order(classic, monkeypatch):
    monkeypatch.setenv("PL_GLOBAL_SEED", "3")
    loader = module(placement=BucketedPlacement(on_device=True)).train_dataloader()
    every = sorted(u.id for u in classic.sets["train"].items)
    assert len(loader) == len(classic.train_dataloader())
    orders = []
    for epoch in (0, 1):
        loader.sampler.set_epoch(epoch)
        orders.append([i for b in loader for i in b["ids"].tolist()])
        assert sorted(orders[-1]) == every  # the classic loader's utterances, each once
    assert orders[0] != orders[1]
    again = module(placement=BucketedPlacement(on_device=True)).train_dataloader()
    again.sampler.set_epoch(1)
    assert [i for b in again for i in b["ids"].tolist()] == orders[1]


def test_mid_epoch_resume_is_exact_order_and_spec_augment(monkeypatch):
    monkeypatch.setenv("PL_GLOBAL_SEED", "7")
    full = module(batch_augment=[SpecAugment(time_width=5, freq_width=4)], placement=BucketedPlacement(on_device=True)).train_dataloader()
    full.sampler.set_epoch(1)
    whole = list(full)
    resumed = module(batch_augment=[SpecAugment(time_width=5, freq_width=4)], placement=BucketedPlacement(on_device="auto")).train_dataloader()
    resumed.sampler.set_epoch(1)
    resumed.sampler.resume_at(1, BS)  # as ResumeState does after one batch
    tail = list(resumed)
    assert len(tail) == len(whole) - 1
    for a, b in zip(tail, whole[1:], strict=True):
        assert torch.equal(a["ids"], b["ids"]) and torch.equal(a["x"], b["x"]) and torch.equal(a["y"], b["y"])


def test_spec_augment_masks_per_utterance_with_the_training_mean(classic):
    """Masked values show the training frames' per-feature mean; only real frames are masked;
    a time mask is at most time_width frames; each utterance draws its own masks."""
    dm = module(batch_augment=[SpecAugment(time_masks=1, time_width=6, freq_masks=1, freq_width=3)], placement=BucketedPlacement(on_device=True))
    mean = torch.cat([u.x for u in dm.sets["train"].items]).mean(0)  # (F,)
    plain = {int(i): (x, m) for b in classic.train_dataloader()
             for i, x, m in zip(b["ids"], b["x"], b["mask"], strict=True)}
    loader = dm.train_dataloader()
    time_widths, bands = [], []
    for epoch in range(4):
        loader.sampler.set_epoch(epoch)
        for b in loader:
            for i, x, m in zip(b["ids"].tolist(), b["x"], b["mask"], strict=True):
                x0, m0 = plain[i]
                n = int(m.sum())
                changed = (x[:n] != x0[:n])  # (n, F)
                assert n == int(m0.sum()) and not m[n:].any() and not x[n:].any()  # padding untouched (zeros)
                assert torch.allclose(x[:n][changed], mean.expand(n, -1)[changed])
                time_widths.append(int(changed.all(1).sum()))
                bands.append(tuple(changed.all(0).nonzero().flatten().tolist()))
    assert max(time_widths) <= 6 and sum(w > 0 for w in time_widths) > len(time_widths) / 2
    assert len(set(bands)) > 3  # frequency bands drawn per utterance


@pytest.mark.parametrize("kw,first_line", [
    ({"batch_augment": [SpecAugment()]}, "batch_augment runs on the data on the device: it needs on_device true or auto"),
    ({"placement": BucketedPlacement(on_device=True), "augment": SpeechAugment(speed_factors=[0.9, 1.1])},
     "placement.on_device: true with augment (speed_factors / noise_snr_db / voice)"),
    ({"placement": BucketedPlacement(on_device="yes")}, "on_device must be true, false or auto, got 'yes'"),
])
def test_option_errors_name_the_option(kw, first_line):
    with pytest.raises(ValueError) as e:
        SpeechFramesDataModule(root=str(ROOT / "data/speech"), **kw)
    assert str(e.value).splitlines()[0].startswith(first_line)


def test_fit_with_the_frames_on_the_device(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    cli = run_cli(["--config", "configs/speech_frames_debug.yaml", "--data.init_args.placement.on_device=true",
                   "--data.init_args.batch_augment+=vecset.pipelines.data.batch_augment.SpecAugment",
                   "--trainer.max_steps", "2", "--trainer.max_epochs", "-1", "--trainer.limit_val_batches", "1",
                   "--trainer.num_sanity_val_steps", "0", "--trainer.default_root_dir", str(tmp_path),
                   "--trainer.enable_checkpointing", "false", "--trainer.logger", "false"], run=False)
    cli.trainer.fit(cli.model, cli.datamodule)
    assert cli.trainer.global_step == 2
    assert isinstance(cli.trainer.train_dataloader, SpeechDeviceLoader)
    assert torch.isfinite(cli.trainer.callback_metrics["train_loss"])


def test_auto_keeps_the_cpu_loader_when_each_draw_is_featurized_on_the_cpu(caplog):
    """Speed perturbation featurizes every training draw on the CPU: ``on_device: auto`` keeps
    the classic loader and says why in one line."""
    import logging

    with caplog.at_level(logging.INFO):
        loader = module(placement=BucketedPlacement(on_device="auto"), augment=SpeechAugment(speed_factors=[0.9, 1.1])).train_dataloader()
    assert not isinstance(loader, SpeechDeviceLoader)
    assert any("data with the CPU loader: speed_factors" in r.getMessage() for r in caplog.records)


def test_a_fit_resumed_mid_epoch_sees_the_uninterrupted_batches(tmp_path, monkeypatch):
    """Frames on the device with SpecAugment through ``vecset fit``: a run stopped after step 2
    of an epoch of 3 and resumed from its checkpoint (ResumeState positions the loader's
    ResumableSampler) trains on the same utterances, masked the same, as the whole run."""
    import pytorch_lightning as pl

    class Record(pl.Callback):
        def __init__(self, save_at: int = -1) -> None:
            self.steps: dict[int, tuple] = {}
            self.save_at = save_at

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
            self.steps[trainer.global_step] = (batch["ids"].tolist(), batch["x"].double().sum().item())

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
            if trainer.global_step == self.save_at:
                trainer.save_checkpoint(tmp_path / "mid.ckpt", weights_only=False)

    monkeypatch.chdir(ROOT)

    def fit(rec: Record, ckpt: Path | None = None) -> Record:
        cli = run_cli(["--config", "configs/speech_frames_debug.yaml", "--data.init_args.placement.on_device=true",
                       "--data.init_args.splits.max_utterances=6", "--data.init_args.batch_size=2",
                       "--data.init_args.batch_augment+=vecset.pipelines.data.batch_augment.SpecAugment",
                       "--trainer.max_steps", "5", "--trainer.max_epochs", "-1", "--trainer.limit_val_batches", "0",
                       "--trainer.num_sanity_val_steps", "0", "--trainer.default_root_dir", str(tmp_path),
                       "--trainer.enable_checkpointing", "false", "--trainer.logger", "false"], run=False)
        cli.trainer.callbacks.append(rec)
        cli.trainer.fit(cli.model, cli.datamodule, ckpt_path=str(ckpt) if ckpt else None)
        return rec

    whole = fit(Record(save_at=2))
    assert sorted(whole.steps) == list(range(5))
    assert sorted(i for s in range(3) for i in whole.steps[s][0]) == sorted(set(whole.steps[0][0] + whole.steps[1][0]
                                                                                 + whole.steps[2][0]))
    resumed = fit(Record(), ckpt=tmp_path / "mid.ckpt")
    assert sorted(resumed.steps) == [2, 3, 4]
    for s in (2, 3, 4):
        assert resumed.steps[s] == whole.steps[s], s


def test_an_image_augmentation_on_speech_is_refused_when_the_config_is_built(tmp_path, monkeypatch, capsys):
    """Issue 57: MixUp on the speech job crashed in its first step (KeyError: 'image'). The data
    module declares the kind of transform it takes (FrameAugment) and refuses another at once: one
    error line naming what it takes, exit 2, no run folder."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        run_cli(["fit", "--config", str(ROOT / "configs/speech_frames_debug.yaml"), "--data.init_args.placement.on_device=true",
                 f"--data.init_args.root={ROOT / 'data/speech'}",
                 "--data.init_args.batch_augment+=vecset.pipelines.data.batch_augment.MixUp"])
    first = capsys.readouterr().err.splitlines()[0]
    assert e.value.code == 2
    assert first == ("error: data (vecset.pipelines.SpeechFramesDataModule): batch_augment: SpeechFramesDataModule "
                     "takes FrameAugments, transforms of frame batches (batch['x'] (B, T, F) with its mask) "
                     "(SpecAugment); MixUp transforms image batches (batch['image'] (B, C, H, W))"), first
    assert not (tmp_path / "runs").exists()
