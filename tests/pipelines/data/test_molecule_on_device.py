"""Molecule graphs on the device (``molecules/device.py``) on the CPU as the device: the classic
collate's batches tensor by tensor, every molecule once an epoch in a seeded order, exact
mid-epoch resume, the NaN/inf check naming the molecule, length buckets (widths from the set,
the same predictions, every molecule once with ``bucket_batches``), and the loss guard naming
the samples of a batch drawn on the device."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from vecset.backbone import Backbone
from vecset.encoders import GraphEncoder
from vecset.heads import SequenceHead
from vecset.pipelines import MoleculeDataModule, NonFiniteGuard, TaskModule
from vecset.pipelines.data.options import BucketedPlacement
from vecset.pipelines.molecules.device import MoleculeDeviceLoader
from vecset.pipelines.molecules.options import MoleculeFeatures
from vecset.pipelines.training.callbacks import NonFiniteError

ROOT = Path(__file__).resolve().parents[3]
N_MOL, BS = 50, 8


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory) -> Path:
    """The first 50 FreeSolv molecules (1 to 24 heavy atoms)."""
    lines = (ROOT / "data/molecules/freesolv.csv").read_text().splitlines()
    path = tmp_path_factory.mktemp("mols") / "mols.csv"
    path.write_text("\n".join(lines[: N_MOL + 1]) + "\n")
    return path


def module(csv_path: Path, **kw) -> MoleculeDataModule:
    dm = MoleculeDataModule(str(csv_path), target_columns=["expt"], batch_size=BS, cache=False, **kw)
    dm.setup("fit")
    return dm


def assert_batches_equal(a: dict, b: dict) -> None:
    assert set(a) == set(b) and a["padded"] == b["padded"]
    for k, v in b.items():
        if isinstance(v, torch.Tensor):
            assert a[k].dtype == v.dtype and torch.equal(a[k], v), k


def test_batches_equal_the_classic_collate(csv_path):
    """Evaluation batches equal the classic loader's; each training batch equals the classic
    collate of the same molecules (the training order is the device sampler's)."""
    dm = module(csv_path, placement=BucketedPlacement(on_device=True), features=MoleculeFeatures(lap_pe_k=3, descriptors=True))
    classic = module(csv_path, features=MoleculeFeatures(lap_pe_k=3, descriptors=True))
    assert isinstance(dm.val_dataloader(), MoleculeDeviceLoader)
    assert not isinstance(classic.val_dataloader(), MoleculeDeviceLoader)
    pairs = list(zip(dm.test_dataloader(), classic.test_dataloader(), strict=True))
    assert pairs and {"lap", "features", "dist", "edge"} <= set(pairs[0][0])
    for a, b in pairs:
        assert_batches_equal(a, b)
    by_id = {it["id"]: it for it in classic.splits["train"]}
    train = list(dm.train_dataloader())
    assert any(b["padded"] for b in train)
    for a in train:
        assert_batches_equal(a, classic.collate([by_id[i] for i in a["ids"].tolist()]))


def test_every_molecule_once_an_epoch_in_a_seeded_order(csv_path, monkeypatch):
    monkeypatch.setenv("PL_GLOBAL_SEED", "3")
    classic = module(csv_path)
    every = sorted(i for b in classic.train_dataloader() for i in b["ids"].tolist())
    loader = module(csv_path, placement=BucketedPlacement(on_device=True)).train_dataloader()
    assert len(loader) == len(classic.train_dataloader())
    orders = []
    for epoch in (0, 1):
        loader.sampler.set_epoch(epoch)
        orders.append([i for b in loader for i in b["ids"].tolist()])
        assert sorted(orders[-1]) == every  # the classic loader's molecules, each once
    assert orders[0] != orders[1]
    again = module(csv_path, placement=BucketedPlacement(on_device="auto")).train_dataloader()
    again.sampler.set_epoch(1)
    assert [i for b in again for i in b["ids"].tolist()] == orders[1]


@pytest.mark.parametrize("kw", [{}, {"length_buckets": "pow2", "bucket_batches": True}])
def test_mid_epoch_resume_is_exact(csv_path, monkeypatch, kw):
    monkeypatch.setenv("PL_GLOBAL_SEED", "7")
    whole = module(csv_path, placement=BucketedPlacement(on_device=True, **kw)).train_dataloader()
    whole.sampler.set_epoch(1)
    full = list(whole)
    resumed = module(csv_path, placement=BucketedPlacement(on_device=True, **kw)).train_dataloader()
    resumed.sampler.set_epoch(1)
    resumed.sampler.resume_at(1, 2 * BS)  # as ResumeState does after two batches
    tail = list(resumed)
    assert len(tail) == len(full) - 2
    for a, b in zip(tail, full[2:], strict=True):
        assert_batches_equal(a, b)


def test_a_nan_is_found_once_on_the_cpu_naming_the_molecule(csv_path):
    dm = module(csv_path, placement=BucketedPlacement(on_device=True))
    item = dm.splits["val"][1]
    item["x"][0, 0] = math.nan
    with pytest.raises(ValueError) as e:
        dm.train_dataloader()
    assert str(e.value).splitlines()[0].startswith(
        f"val split: {csv_path}:{item['line']} {item['smiles']}: non-finite values (NaN or inf) in 'x'")


def graph_model() -> TaskModule:
    pl.seed_everything(0)
    return TaskModule(GraphEncoder(d_model=16, heads=2), Backbone(d_model=16, depth=1, heads=2, mlp_ratio=2.0),
                      SequenceHead(16, 1, task="regression"))


@pytest.mark.parametrize("on_device", [True, False])
def test_length_buckets_pad_to_the_set_and_change_no_prediction(csv_path, on_device):
    """Every batch's width is a bucket (pow2: 8, 16, 32; edges [12, 20]: 12, 20, or the batch's
    own above 20); the model's predictions equal the unbucketed batches' (padding is masked)."""
    model = graph_model().eval()
    plain = list(module(csv_path, placement=BucketedPlacement(on_device=on_device)).test_dataloader())
    for spec, allowed in (("pow2", {8, 16, 32}), ([12, 20], {12, 20})):
        bucketed = list(module(csv_path, placement=BucketedPlacement(on_device=on_device, length_buckets=spec)).test_dataloader())
        for a, b in zip(bucketed, plain, strict=True):
            N, n = a["mask"].shape[1], b["mask"].shape[1]
            assert N in allowed or (isinstance(spec, list) and n > spec[-1] and N == n)
            assert N >= n and torch.equal(a["mask"][:, :n], b["mask"]) and not a["mask"][:, n:].any()
            with torch.no_grad():
                assert torch.allclose(model(a), model(b), atol=1e-5)


def test_bucket_batches_draw_every_molecule_once_within_one_bucket(csv_path):
    dm = module(csv_path, placement=BucketedPlacement(on_device=True, length_buckets=[8, 12, 16], bucket_batches=True))
    loader = dm.train_dataloader()
    lengths = {it["id"]: it["x"].shape[0] for it in dm.splits["train"]}
    seen = []
    for epoch in (0, 1):
        loader.sampler.set_epoch(epoch)
        batches = list(loader)
        assert len(batches) == len(loader)
        for b in batches:
            widths = {dm.buckets.length(lengths[i]) for i in b["ids"].tolist()}
            assert len(widths) == 1 and b["mask"].shape[1] == widths.pop()
        seen.append([i for b in batches for i in b["ids"].tolist()])
        assert sorted(seen[-1]) == sorted(lengths)
    assert seen[0] != seen[1]


@pytest.mark.parametrize("kw,first_line", [
    ({"bucket_batches": True, "length_buckets": "pow2"}, "bucket_batches draws the batches of the data on the device"),
    ({"bucket_batches": True, "on_device": True}, "bucket_batches needs length_buckets"),
    ({"length_buckets": [16, 8]}, "length_buckets must be null, 'pow2' or increasing positive integers"),
    ({"on_device": "yes"}, "on_device must be true, false or auto, got 'yes'"),
])
def test_option_errors_name_the_option(csv_path, kw, first_line):
    with pytest.raises(ValueError) as e:
        MoleculeDataModule(str(csv_path), target_columns=["expt"], placement=BucketedPlacement(**kw))
    assert str(e.value).splitlines()[0].startswith(first_line)


def test_the_loss_guard_names_the_samples_of_a_batch_drawn_on_the_device(csv_path, tmp_path, monkeypatch):
    """On a GPU a batch drawn there is never read on the host (``check_on_host`` leaves it), so
    the guard keeps its ids tensor and reads it only to report: simulated on the CPU by making
    every batch count as on the device. The NaN loss of batch 1 names its molecules."""
    import vecset.pipelines.training.step as step

    monkeypatch.setattr(step, "on_host", lambda batch: False)
    model = graph_model()
    real_loss, calls = model.head.loss, []

    def loss(out, batch):
        calls.append(model.training)
        value = real_loss(out, batch)
        return value * math.nan if sum(calls) == 2 else value

    model.head.loss = loss
    dm = MoleculeDataModule(str(csv_path), target_columns=["expt"], batch_size=BS, cache=False, placement=BucketedPlacement(on_device=True))
    seen: list[list[int]] = []

    class Ids(pl.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            seen.append(batch["ids"].tolist())

    trainer = pl.Trainer(max_epochs=1, accelerator="cpu", callbacks=[Ids(), NonFiniteGuard()], logger=False,
                         enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path,
                         log_every_n_steps=1, num_sanity_val_steps=0)
    with pytest.raises(NonFiniteError) as e:
        trainer.fit(model, datamodule=dm)
    item = next(it for it in dm.splits["train"] if it["id"] == seen[1][0])
    assert f"sample ids in this batch: {seen[1]} ({csv_path}:{item['line']} {item['smiles']};" in str(e.value)


def test_a_fit_resumed_mid_epoch_sees_the_uninterrupted_batches(csv_path, tmp_path):
    """Graphs on the device through a Trainer with ResumeState (a CLI default): a run stopped
    after step 2 of an epoch of 5 and resumed from its checkpoint trains on the same molecules
    at steps 2..6 (across the epoch's end) as the whole run."""
    from vecset.pipelines.training.callbacks import ResumeState

    class Record(pl.Callback):
        def __init__(self, save_at: int = -1) -> None:
            self.steps: dict[int, list[int]] = {}
            self.save_at = save_at

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
            self.steps[trainer.global_step] = batch["ids"].tolist()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
            if trainer.global_step == self.save_at:
                trainer.save_checkpoint(tmp_path / "mid.ckpt", weights_only=False)

    def fit(rec: Record, ckpt: Path | None = None) -> Record:
        dm = MoleculeDataModule(str(csv_path), target_columns=["expt"], batch_size=BS, cache=False, placement=BucketedPlacement(on_device=True))
        trainer = pl.Trainer(max_steps=7, accelerator="cpu", callbacks=[ResumeState(), rec], logger=False,
                             enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path,
                             limit_val_batches=0, num_sanity_val_steps=0, enable_checkpointing=False)
        trainer.fit(graph_model(), datamodule=dm, ckpt_path=str(ckpt) if ckpt else None)
        assert isinstance(trainer.train_dataloader, MoleculeDeviceLoader)
        return rec

    whole = fit(Record(save_at=2))
    assert sorted(whole.steps) == list(range(7))
    resumed = fit(Record(), ckpt=tmp_path / "mid.ckpt")
    assert sorted(resumed.steps) == [2, 3, 4, 5, 6]
    for s in resumed.steps:
        assert resumed.steps[s] == whole.steps[s], s
