"""NonFiniteGuard: a NaN/inf in a batch stops training before any optimizer step is taken on
it (checked on the host, before the transfer); a NaN/inf loss stops it at the next host read
of the guard's device-side flag (a logging step, the epoch's end, before validation or a
checkpoint), before any checkpoint is written. Both name the batch, the sample ids and the
inputs they came from (the data module's ``describe``)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import pytorch_lightning as pl
import torch
from resume_helpers import PoisonedSets

from vecset.backbone import Backbone
from vecset.encoders import GraphEncoder, VectorEncoder
from vecset.encoders.collate import pad_sets
from vecset.heads import LabelingHead, SequenceHead
from vecset.pipelines import (
    MoleculeDataModule,
    MultiTaskDataModule,
    NonFiniteGuard,
    SyntheticSetDataModule,
    TaskModule,
)
from vecset.pipelines.training.callbacks import NonFiniteError


class DescribedSets(SyntheticSetDataModule):
    """The synthetic sets, each called ``<name>-set-<id>`` by ``describe``."""

    def __init__(self, name: str = "syn") -> None:
        super().__init__(n_train=64, n_val=16, n_test=16, batch_size=16)
        self.name = name

    def describe(self, sample_id: int) -> str:
        return f"{self.name}-set-{sample_id}"


class PoisonedMolecules(MoleculeDataModule):
    """A molecule CSV whose first training molecule gets a NaN node feature once featurized."""

    def setup(self, stage: str | None = None) -> None:
        super().setup(stage)
        self.splits["train"][0]["x"][0, 0] = math.nan


def model() -> TaskModule:
    return TaskModule(VectorEncoder(2, 16), Backbone(d_model=16, depth=1, heads=2, mlp_ratio=2.0), LabelingHead(16, 2))


def trainer(tmp_path) -> pl.Trainer:
    return pl.Trainer(max_epochs=1, accelerator="cpu", callbacks=[NonFiniteGuard()], logger=False,
                      enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path)


@pytest.mark.parametrize("value,kind", [(math.nan, "nan"), (math.inf, "inf"), (-math.inf, "inf")])
def test_nonfinite_input_names_batch_and_sample(tmp_path, value, kind):
    pl.seed_everything(0)
    m = model()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    dm = PoisonedSets(poison_id=37, value=value)
    with pytest.raises(NonFiniteError) as e:
        trainer(tmp_path).fit(m, datamodule=dm)
    msg = str(e.value)
    assert msg.startswith(f"{kind} in batch['x'] of train batch ")
    assert "sample ids: [37]" in msg
    # the shuffled position of sample 37 is the batch named
    batch_idx = int(msg.split("train batch ")[1].split()[0])
    order = list(dm.train_dataloader().sampler)
    assert order.index(37) // 16 == batch_idx
    if batch_idx == 0:  # stopped before the first step: weights untouched
        assert all(torch.equal(v, before[k]) for k, v in m.state_dict().items())


@pytest.mark.parametrize("every,stopped_at", [(50, 4), (1, 3)])
def test_nonfinite_loss_is_reported_at_the_next_read(tmp_path, every, stopped_at):
    """The loss of batch 2 is NaN. Logging every 50 steps, the guard reads its flag at the
    epoch's end (before validation): 4 steps taken. Logging every step, at step 2's end: 3 taken
    (its optimizer step too). Either way the error names batch 2 and its samples, and no
    checkpoint is written."""
    pl.seed_everything(0)
    m = model()
    real_loss = m.head.loss
    calls = []

    def loss(out, batch):  # finite inputs, NaN loss on the third batch
        calls.append(m.training)  # count training batches only (not the sanity check)
        value = real_loss(out, batch)
        return value * math.nan if sum(calls) == 3 else value

    m.head.loss = loss
    dm = DescribedSets()
    t = pl.Trainer(max_epochs=1, accelerator="cpu", callbacks=[NonFiniteGuard()], logger=False,
                   enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path,
                   log_every_n_steps=every)
    with pytest.raises(NonFiniteError, match=r"training loss is nan at train batch 2 .*global step 2\); .*"
                                             r"sample ids in this batch: \[") as e:
        t.fit(m, datamodule=dm)
    assert t.global_step == stopped_at
    assert f"Found at global step {stopped_at}" in str(e.value)
    ids = eval(str(e.value).split("sample ids in this batch: ")[1].split("]")[0] + "]")
    order = list(dm.train_dataloader().sampler)
    assert ids == order[32:48]
    named = "; ".join(f"syn-set-{i}" for i in ids[:10])
    assert f"sample ids in this batch: {ids} ({named}; and 6 more)" in str(e.value)
    assert not list(tmp_path.rglob("*.ckpt"))


def test_guard_is_a_cli_default(tmp_path, monkeypatch):
    from pathlib import Path

    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    root = Path(__file__).resolve().parents[3]
    with pytest.raises(NonFiniteError, match=r"nan in batch\['x'\] of train batch \d+ .*sample ids: \[5\]"):
        run_cli(["fit", "--config", str(root / "configs/debug.yaml"), "--data=resume_helpers.PoisonedSets",
                 "--data.init_args.poison_id=5", "--data.init_args.value=.nan", "--trainer.max_epochs=1"])


def test_nonfinite_input_names_the_csv_file_and_line(tmp_path):
    path = tmp_path / "mols.csv"
    path.write_text("smiles,y\n\n" + "".join(f"{'C' * (i % 5 + 1)}O,{i}\n" for i in range(20)))  # line 2 blank
    dm = PoisonedMolecules(str(path), target_columns=["y"])
    m = TaskModule(GraphEncoder(d_model=16, heads=2), Backbone(d_model=16, depth=1, heads=2, mlp_ratio=2.0),
                   SequenceHead(16, 1, task="regression"))
    with pytest.raises(NonFiniteError) as e:
        trainer(tmp_path).fit(m, datamodule=dm)
    item = dm.splits["train"][0]
    assert item["line"] == item["id"] + 3  # the blank line counts
    assert "nan in batch['x'] of train batch 0 " in str(e.value)
    assert f"sample ids: [{item['id']}] ({path}:{item['line']} {item['smiles']})" in str(e.value)


def test_multitask_guard_names_the_input_through_the_tasks_data_module():
    dm = MultiTaskDataModule({"a": DescribedSets("a"), "b": DescribedSets("b")})
    dm.setup("fit")
    assert dm.describe(5, task="b") == "b-set-5"
    assert MultiTaskDataModule({"plain": pl.LightningDataModule()}).describe(5) == "5"
    batches = {k: pad_sets(dm.tasks[k].sets["train"].items[:4]) for k in ("a", "b")}
    batches["b"]["x"][2, 0, 0] = math.nan
    fake = SimpleNamespace(datamodule=dm, current_epoch=0, global_step=0, world_size=1, training=True,
                           fit_loop=SimpleNamespace(epoch_loop=SimpleNamespace(batch_idx=-1)))
    guard = NonFiniteGuard()
    # training batches are checked on the host, before the transfer (check_on_host calls it)
    with pytest.raises(NonFiniteError, match=r"of train \(b\) batch 0 .*sample ids: \[2\] \(b-set-2\)"):
        guard.check_host_batch(fake, batches)
    # validation runs the tasks' loaders one after another: the loader's index is the task
    with pytest.raises(NonFiniteError, match=r"of validation \(b\) batch 0 .*sample ids: \[2\] \(b-set-2\)"):
        guard.on_validation_batch_start(fake, None, batches["b"], 0, dataloader_idx=1)


def _fake_trainer(dm=None) -> SimpleNamespace:
    return SimpleNamespace(datamodule=dm, current_epoch=0, global_step=0, world_size=1, training=True,
                           fit_loop=SimpleNamespace(epoch_loop=SimpleNamespace(batch_idx=-1)))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_the_one_sum_check_finds_a_bad_value_in_any_field_and_names_it(bad):
    """The host check sums each float field once and reads one total (a NaN or inf makes it
    non-finite); the per-row search behind it still names the field and the samples. A bad
    value in the second field, beside finite ones, in a batch of several float dtypes."""
    batch = {"x": torch.randn(4, 3, 2), "features": torch.randn(4, 5, dtype=torch.float64),
             "y": torch.randn(4, 1).to(torch.bfloat16), "ids": torch.tensor([10, 11, 12, 13]),
             "mask": torch.ones(4, 3, dtype=torch.bool)}
    NonFiniteGuard().check_host_batch(_fake_trainer(), batch)  # all finite: no error
    batch["features"][2, 4] = bad
    kind = "nan" if math.isnan(bad) else "inf"
    with pytest.raises(NonFiniteError, match=rf"^{kind} in batch\['features'\] of train batch 0 .*sample ids: \[12\]"):
        NonFiniteGuard().check_host_batch(_fake_trainer(), batch)


def test_a_sum_that_overflows_from_finite_values_is_not_an_error():
    """Finite values whose sum overflows send the batch to the per-row search, which finds
    every value finite: no error."""
    batch = {"x": torch.full((2, 3), 1e308, dtype=torch.float64), "ids": torch.tensor([0, 1])}
    assert not torch.isfinite(batch["x"].sum())
    NonFiniteGuard().check_host_batch(_fake_trainer(), batch)


def test_check_on_host_calls_every_callback_that_declares_the_host_check():
    """``check_on_host`` asks once per class whether a callback declares ``HostBatchCheck``
    (a Protocol isinstance per callback per step was half the host check's cost); a declared
    one is called at every batch, an undeclared one never."""
    from vecset.pipelines.training.step import check_on_host, declares_host_check

    seen = []

    class Declares(pl.Callback):
        def check_host_batch(self, trainer, batch, dataloader_idx: int = 0) -> None:
            seen.append(len(batch["ids"]))

    trainer = SimpleNamespace(callbacks=[Declares(), pl.Callback(), Declares()])
    module = SimpleNamespace(_trainer=trainer)
    batch = {"x": torch.zeros(3, 2, 2), "y": torch.zeros(3, 2, dtype=torch.long), "ids": torch.arange(3)}
    for _ in range(2):
        check_on_host(module, batch, {None: LabelingHead(8, 2)})
    assert seen == [3, 3, 3, 3]
    assert declares_host_check(Declares) and not declares_host_check(pl.Callback)
    assert declares_host_check(NonFiniteGuard)


def test_a_batch_drawn_on_the_device_is_named_by_its_ids_read_only_when_reporting():
    """A batch that never passed ``check_host_batch`` (drawn on the device: images, speech,
    molecules with ``on_device``) keeps its ids tensor, unread; a non-finite loss then names
    them, per task in a multi-task batch, instead of ``?``."""
    dm = MultiTaskDataModule({"a": DescribedSets("a"), "b": DescribedSets("b")})
    fake = SimpleNamespace(datamodule=dm, current_epoch=0, global_step=0, world_size=1, training=True,
                           fit_loop=SimpleNamespace(epoch_loop=SimpleNamespace(batch_idx=0)))
    guard = NonFiniteGuard()
    batch = {"a": {"ids": torch.tensor([3, 4])}, "b": {"ids": torch.tensor([7])}}
    guard.on_train_batch_start(fake, None, batch, 0)
    guard.on_before_backward(fake, None, torch.tensor(math.nan))
    with pytest.raises(NonFiniteError, match=r"sample ids in this batch: a \[3, 4\] \(a-set-3; a-set-4\), "
                                             r"b \[7\] \(b-set-7\)"):
        guard.on_train_epoch_end(fake, None)
