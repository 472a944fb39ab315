"""Length buckets (``data/gathered.py``) for speech frames: the widths a batch may take, the
model's outputs on the real frames unchanged by the bucket's padding (classic and on-device
loaders), and ``bucket_batches``: every utterance once an epoch, each batch within one bucket,
exact mid-epoch resume. Molecules: tests/pipelines/data/test_molecule_on_device.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from vecset.backbone import Backbone
from vecset.encoders import SpeechEncoder
from vecset.heads import LabelingHead
from vecset.pipelines import SpeechFramesDataModule, TaskModule
from vecset.pipelines.data.gathered import LengthBuckets
from vecset.pipelines.data.options import BucketedPlacement
from vecset.pipelines.speech.options import SpeechSplits

ROOT = Path(__file__).resolve().parents[3]
N_UTT, BS = 10, 3


def module(**kw) -> SpeechFramesDataModule:
    dm = SpeechFramesDataModule(root=str(ROOT / "data/speech"), batch_size=BS, splits=SpeechSplits(max_utterances=N_UTT), **kw)
    dm.setup("fit")
    return dm


def test_bucket_widths():
    assert [LengthBuckets("pow2").length(n) for n in (1, 8, 9, 200, 256, 257)] == [8, 8, 16, 256, 256, 512]
    edges = LengthBuckets([100, 300])
    assert [edges.length(n) for n in (1, 100, 101, 300, 301)] == [100, 100, 300, 300, 301]
    assert edges.beyond([50, 301, 400]) == 2 and LengthBuckets(None).length(37) == 37


@pytest.mark.parametrize("on_device", [True, False])
def test_outputs_on_the_real_frames_equal_the_unbucketed_batch(on_device):
    """Sinusoidal positions, a convolution over time, per-utterance normalization and
    attention within +-4 frames: the bucket's extra padding changes no real frame's logits."""
    pl.seed_everything(0)
    model = TaskModule(SpeechEncoder(40, 16, normalization="utterance", positional="sinusoidal", conv_kernel=3),
                       Backbone(d_model=16, depth=1, heads=2, mlp_ratio=2.0, window=4), LabelingHead(16, 42)).eval()
    plain = list(module(placement=BucketedPlacement(on_device=on_device)).val_dataloader())
    bucketed = list(module(placement=BucketedPlacement(on_device=on_device, length_buckets="pow2")).val_dataloader())
    assert len(plain) == len(bucketed) > 1
    for a, b in zip(bucketed, plain, strict=True):
        N, n = a["mask"].shape[1], b["mask"].shape[1]
        assert N == LengthBuckets("pow2").length(n) and N & (N - 1) == 0 and N > n and a["padded"]
        assert torch.equal(a["x"][:, :n], b["x"]) and not a["x"][:, n:].any() and (a["y"][:, n:] == -100).all()
        with torch.no_grad():
            out_a, out_b = model(a), model(b)
        real = b["mask"]
        assert torch.allclose(out_a[:, :n][real], out_b[real], atol=1e-5)


def test_bucket_batches_every_utterance_once_within_one_bucket_and_resume(monkeypatch):
    monkeypatch.setenv("PL_GLOBAL_SEED", "5")
    edges = [150, 200, 250]
    dm = module(placement=BucketedPlacement(on_device=True, length_buckets=edges, bucket_batches=True))
    buckets = LengthBuckets(edges)
    lengths = {u.id: len(u.x) for u in dm.sets["train"].items}
    assert len({buckets.length(n) for n in lengths.values()}) > 1
    loader = dm.train_dataloader()
    orders = []
    for epoch in (0, 1):
        loader.sampler.set_epoch(epoch)
        batches = list(loader)
        assert len(batches) == len(loader)
        for b in batches:
            widths = {buckets.length(lengths[i]) for i in b["ids"].tolist()}
            assert len(widths) == 1 and b["mask"].shape[1] == widths.pop()
        orders.append([i for b in batches for i in b["ids"].tolist()])
        assert sorted(orders[-1]) == sorted(lengths)
    assert orders[0] != orders[1]
    resumed = module(placement=BucketedPlacement(on_device=True, length_buckets=edges, bucket_batches=True)).train_dataloader()
    resumed.sampler.set_epoch(1)
    resumed.sampler.resume_at(1, BS)  # after one batch, as ResumeState does
    assert [i for b in resumed for i in b["ids"].tolist()] == orders[1][len(batches[0]["ids"]):]
