"""A training step reads no tensor value on the host outside logging steps (on a GPU each such
read is a host-device sync: the GPU waits for the host and the host for the GPU).

Each shipped config that runs here trains a few steps under a counter of host reads (a
TorchFunctionMode: ``__bool__``, ``item``, ``tolist``, ``nonzero``, boolean-mask indexing...),
over the whole of each training batch
(Lightning's batch loop: the transfer, the callbacks, the step, the optimizer, the logging),
less the data loader and ``on_before_batch_transfer`` (the batch is still on the host there)
and ``torch.optim`` (its step counters stay on the CPU on a GPU too). A step that logs
(``log_every_n_steps``) may read; the others read nothing.
"""

from __future__ import annotations

import collections
import traceback
from pathlib import Path

import pytest
import torch
from torch.overrides import TorchFunctionMode

from vecset.pipelines.cli import run_cli

ROOT = Path(__file__).resolve().parents[3]
READS = {"__bool__", "item", "tolist", "__float__", "__int__", "__index__", "nonzero", "numpy", "unique",
         "masked_select"}


def host_side(stack: list) -> bool:
    """A read in the data loader (CPU tensors), in ``on_before_batch_transfer`` (the batch is
    still on the host) or in torch.optim's own code (its step counters stay on the CPU; the
    training step runs inside ``optimizer.step(closure)``, so only frames after the last
    torch.optim one tell)."""
    if any("/torch/utils/data/" in f.filename or f.name == "on_before_batch_transfer" for f in stack):
        return True
    optim = [i for i, f in enumerate(stack) if "/torch/optim/" in f.filename]
    return bool(optim) and all("/torch/" in f.filename for f in stack[optim[-1]:])


class HostReads(TorchFunctionMode):
    """Counts host reads of tensor values while ``on``, by training step, with where they came from."""

    def __init__(self) -> None:
        super().__init__()
        self.on, self.step = False, -1
        self.sites: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if self.on:
            name = getattr(func, "__name__", "")
            hit = name in READS or (name == "__getitem__" and len(args) > 1 and isinstance(args[1], torch.Tensor)
                                    and args[1].dtype == torch.bool)
            if hit:
                stack = traceback.extract_stack()[:-1]
                if not host_side(stack):
                    inner = [f for f in stack if "/torch/" not in f.filename][-3:]
                    self.sites[self.step][" <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(inner))] += 1
        return func(*args, **(kwargs or {}))


def quiet_step_reads(config: str, tmp_path, steps: int = 6, every: int = 4, extra: tuple = ()) -> dict:
    """Train ``steps`` steps of ``config`` logging every ``every``; {step: Counter(site)} of the
    host reads of the steps that do not log."""
    cli = run_cli(["--config", str(ROOT / "configs" / config), "--trainer.max_steps", str(steps),
                   "--trainer.max_epochs", "-1", "--trainer.limit_val_batches", "0",
                   "--trainer.num_sanity_val_steps", "0", "--trainer.log_every_n_steps", str(every),
                   "--trainer.default_root_dir", str(tmp_path), "--trainer.enable_checkpointing", "false",
                   *extra], run=False)
    trainer = cli.trainer
    loop = trainer.fit_loop.epoch_loop
    advance, logging = loop.advance, set()
    counter = HostReads()

    def counted(*args, **kwargs):
        counter.step = trainer.global_step
        if (loop._batches_that_stepped + 1) % every == 0:  # Lightning's should_update_logs
            logging.add(counter.step)
        counter.on = True
        try:
            return advance(*args, **kwargs)
        finally:
            counter.on = False

    loop.advance = counted
    with counter:
        trainer.fit(cli.model, cli.datamodule)
    assert trainer.global_step == steps
    return {s: c for s, c in counter.sites.items() if s not in logging and c}


# (config, extra CLI arguments, sites allowed one read a step): the shipped configs that run here
# in seconds, made tiny. None is allowed a read: Seq2SeqHead's training PER/WER keep the
# teacher-forced argmax on the device and score it at the epoch's end.
CONFIGS = [
    ("debug.yaml", (), ()),
    ("debug_multitask.yaml", (), ()),
    ("digits.yaml", (), ()),
    ("speech_frames_debug.yaml", (), ()),
    ("g2p_debug.yaml", (), ()),
    ("digits_pixel.yaml", (), ()),
    ("fashion_mnist_debug.yaml", (), ()),
    ("karate.yaml", (), ()),
    ("kernel_regression.yaml", (), ()),
]


@pytest.mark.parametrize("config,extra,allowed", CONFIGS, ids=[c for c, _, _ in CONFIGS])
def test_no_host_reads_outside_logging_steps(config, extra, allowed, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the configs' data paths are relative to the checkout
    reads = quiet_step_reads(config, tmp_path, extra=extra)
    for sites in reads.values():
        for site in allowed:
            for key in [k for k in sites if k.startswith(site)]:
                sites[key] -= 1  # one a step allowed
    reads = {s: +c for s, c in reads.items() if +c}
    assert not reads, f"{config}: host reads in steps that do not log: {dict(reads)}"


def test_adamw_is_not_fused_on_the_cpu():
    """The fused AdamW is for CUDA parameters (tests/pipelines/test_cuda.py); on the CPU it is
    torch's default AdamW."""
    from types import SimpleNamespace

    from vecset.backbone import Backbone
    from vecset.encoders import VectorEncoder
    from vecset.heads import LabelingHead
    from vecset.pipelines import TaskModule
    from vecset.pipelines.training.task import adamw_warmup_cosine

    m = TaskModule(VectorEncoder(2, 8), Backbone(d_model=8, depth=1, heads=2), LabelingHead(8, 2))
    m._trainer = SimpleNamespace(estimated_stepping_batches=10, callbacks=[])
    assert not adamw_warmup_cosine(m, 1e-3, 0.01, 0.0)["optimizer"].defaults["fused"]


def test_a_batch_already_on_the_device_is_not_read():
    """Label ranges are checked on the host; a batch whose data already live on the training
    device (the device loader, checked when the data were put there) is passed on unread: a read
    there would be a sync. The meta device stands in for a GPU."""
    from types import SimpleNamespace

    import torch

    from vecset.heads import LabelingHead
    from vecset.pipelines.training.step import check_on_host, on_host

    module = SimpleNamespace(_trainer=None)
    bad = {"x": torch.zeros(1, 3, 2), "y": torch.tensor([[0, 5, 1]]), "ids": torch.tensor([0])}
    with pytest.raises(ValueError, match="label out of range"):
        check_on_host(module, bad, {None: LabelingHead(8, 2)})
    on_device = {k: v.to("meta") for k, v in bad.items()}
    assert on_host(bad) and not on_host(on_device)
    assert check_on_host(module, on_device, {None: LabelingHead(8, 2)}) is on_device
