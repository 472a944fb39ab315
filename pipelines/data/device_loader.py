"""Data resident on the training device: index batches drawn there, whole batches augmented there.

A small dataset (Fashion-MNIST's 54,000 training images are 42 MB as uint8) fits many times in
a GPU's memory. Keeping it there removes the per-sample ``__getitem__``, the collate and the
host-to-device copy of every batch (the loader alone gave 154 batches/s on an H200, issue #44);
a batch is then one gather of the resident tensors by an index tensor on the device, and the
step never waits on the host (airbench: Jordan 2024, "94% on CIFAR-10 in 3.29 seconds on a
single GPU", arXiv:2404.00498). On the CPU accelerator the same code runs with the CPU as the
device.

- ``DeviceSampler``: a ``ResumableSampler`` whose permutation of epoch ``e`` is
  ``randperm(n, seed + e)`` drawn on the device, sharded like ``DistributedSampler`` (padded
  to an equal share per process, ``rank::replicas``) and resumable in mid-epoch
  (``ResumeState`` calls its ``resume_at``): every sample once an epoch, in an order set by
  (seed, epoch) alone.
- ``DeviceLoader``: the iterable a data module returns instead of a ``DataLoader``: it holds
  the resident tensors, draws the batches' indices from its ``DeviceSampler`` (or a fixed
  order for evaluation) and runs the batch transforms (scaling, normalization, the
  augmentations of ``batch_augment.py``) on each gathered batch, seeded per (seed, epoch,
  batch, rank) so a resumed run augments as an uninterrupted one.
- ``resident_bytes``, ``memory_budget``, ``check_finite``: what deciding ``on_device`` needs.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import torch
from pytorch_lightning.utilities import rank_zero_info
from torch import Tensor

from vecset.pipelines.data.batch_augment import BatchAugment
from vecset.pipelines.data.samplers import ResumableSampler, eval_sampler

log = logging.getLogger(__name__)

# a batch transform: (batch of resident tensors gathered on the device, generator on that device) -> batch
BatchTransform = Callable[[dict, torch.Generator], dict]


class DeviceSampler(ResumableSampler):
    """The indices of one epoch of this process's shard as a tensor on ``device``.

    ``indices()`` is what ``DeviceLoader`` reads; iterating gives the same indices as ints
    (a host read: for tests and tools, not for training).

    Args:
        n: the number of samples.
        device: where the permutation is drawn and kept.
        shuffle: a new permutation every epoch (``set_epoch``), else 0..n-1.
        seed: the permutation seed; default: ``seed_everything``'s (``PL_GLOBAL_SEED``).
        drop_last: drop the tail instead of padding it to an equal share per process.
    """

    def __init__(self, n: int, device: torch.device | str, shuffle: bool = True, seed: int | None = None,
                 drop_last: bool = False) -> None:
        super().__init__(range(n), shuffle=shuffle, seed=seed, drop_last=drop_last)
        self.n, self.device = n, torch.device(device)

    def indices(self) -> Tensor:
        """(num_samples - skipped,) long on the device: this epoch's shard, after a resume's skip."""
        if self.shuffle:
            g = torch.Generator(device=self.device)
            g.manual_seed(self.seed + self.epoch)
            order = torch.randperm(self.n, generator=g, device=self.device)
        else:
            order = torch.arange(self.n, device=self.device)
        if self.drop_last:
            order = order[:self.total_size]
        elif self.total_size > self.n:  # DistributedSampler's padding: the first indices again
            order = order.repeat(math.ceil(self.total_size / self.n))[:self.total_size]
        order = order[self.rank:self.total_size:self.num_replicas]
        if self._resume_epoch is not None and self._resume_epoch == self.epoch:
            order = order[self._resume_skip:]
            self._resume_epoch, self._resume_skip = None, 0
        return order

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices().tolist())


def batch_seed(seed: int, epoch: int, batch: int, rank: int) -> int:
    """A 63-bit seed for one batch's augmentation, a function of (seed, epoch, batch, rank)
    alone (numpy's SeedSequence mixes them), so a resumed run draws what an uninterrupted one did."""
    return int(np.random.SeedSequence([seed, epoch, batch, rank]).generate_state(2, np.uint64)[0] >> np.uint64(1))


class DeviceLoader:
    """Batches gathered from tensors resident on one device.

    Training (``sampler`` given): each epoch the sampler's permutation, cut into batches of
    ``batch_size``; the last one is short unless ``drop_last``. Evaluation (``order`` given):
    those indices in that order. Every batch is ``{key: tensor[idx]}`` then ``transforms`` in
    turn, each with a ``torch.Generator`` on the device seeded by ``batch_seed``; a ``BatchAugment``
    is told the epoch (``set_epoch``) before its first batch.

    It has what Lightning and ``ResumeState`` read from a ``DataLoader``: ``len()`` (batches
    per epoch), ``batch_size`` and ``sampler`` (``set_epoch``, ``resume_at``).

    Shapes:
        tensors: every value (N, ...) with one N, on ``device``; a batch (B, ...) of each.
    """

    def __init__(self, tensors: Mapping[str, Tensor], batch_size: int, sampler: DeviceSampler | None = None,
                 order: Tensor | None = None, transforms: Sequence[BatchTransform] = (),
                 drop_last: bool = False) -> None:
        if (sampler is None) == (order is None):
            raise ValueError("DeviceLoader needs exactly one of sampler (training) or order (evaluation)")
        sizes = {k: len(v) for k, v in tensors.items()}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"DeviceLoader's tensors must share their first dimension, got {sizes}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.tensors, self.batch_size, self.sampler, self.order = dict(tensors), batch_size, sampler, order
        self.transforms, self.drop_last = list(transforms), drop_last
        # what Lightning reads from a DataLoader (e.g. whether it shuffles): the indices come
        # from ``sampler``, not from a batch sampler
        self.batch_sampler = None

    def _count(self) -> int:
        return len(self.sampler) if self.sampler is not None else len(self.order)

    def __len__(self) -> int:
        n = self._count()
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def __iter__(self) -> Iterator[dict]:
        if self.sampler is not None:
            s = self.sampler
            # the batch number within the epoch, counted from its start across a resume: the
            # augmentation of batch k is the same whether or not the run was interrupted
            first = (s._resume_skip // self.batch_size) if s._resume_epoch == s.epoch else 0
            idx, epoch, rank, seed = s.indices(), s.epoch, s.rank, s.seed
        else:
            first, idx, epoch, rank, seed = 0, self.order, 0, 0, 0
        n = len(idx)  # shape metadata: no device read
        stop = n - n % self.batch_size if self.drop_last else n
        for transform in self.transforms:  # the augmentations are told the epoch (AlternatingFlip follows it)
            if isinstance(transform, BatchAugment):
                transform.set_epoch(epoch)
        g = torch.Generator(device=idx.device) if self.transforms else None
        for k, start in enumerate(range(0, stop, self.batch_size)):
            b = idx[start:start + self.batch_size]
            batch = {key: t[b] for key, t in self.tensors.items()}
            if g is not None:
                g.manual_seed(batch_seed(seed, epoch, first + k, rank))
                for transform in self.transforms:
                    batch = transform(batch, g)
            yield batch


class ScaleNormalize:
    """``(x / scale - mean) / std`` per channel, on the batch's device: a raw batch into the model's
    input (torchvision's ``ToDtype(scale=True)`` + ``Normalize``, whose constants would be copied
    to the device at every call: a copy from the host that waits for the GPU's queue). The
    constants are copied once per device.

    Shapes:
        x (B, C, H, W) any dtype -> (B, C, H, W) float32.
    """

    def __init__(self, scale: float, mean: Sequence[float], std: Sequence[float]) -> None:
        if any(v == 0 for v in std):
            raise ValueError(f"std must not be 0, got {list(std)}")
        self.scale, self.mean, self.std = float(scale), list(mean), list(std)
        self._consts: dict[torch.device, tuple[Tensor, Tensor]] = {}

    def __call__(self, x: Tensor) -> Tensor:
        if x.device not in self._consts:
            self._consts[x.device] = (torch.tensor(self.mean, device=x.device).view(1, -1, 1, 1),
                                      torch.tensor(self.std, device=x.device).view(1, -1, 1, 1))
        mean, std = self._consts[x.device]
        return (x.float() / self.scale - mean) / std


def eval_order(n: int, batch_size: int, device: torch.device) -> tuple[Tensor, int]:
    """(indices on ``device``, batch size) of an evaluation split: 0..n-1 in one process; under
    torch.distributed the disjoint shares and even batch size of ``eval_sampler``."""
    sampler, bs = eval_sampler(range(n), batch_size)
    if sampler is None:
        return torch.arange(n, device=device), bs
    return torch.tensor(list(sampler), dtype=torch.long, device=device), bs


def resident_bytes(tensors: Mapping[str, Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors.values())


def memory_budget(device: torch.device) -> tuple[int, str]:
    """(bytes, what they are) of the device's memory: a GPU's total memory, or the host's RAM."""
    if device.type == "cuda":
        _, total = torch.cuda.mem_get_info(device)
        return total, f"{torch.cuda.get_device_name(device)} memory"
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "host memory"


def memory_share(size: int, device: torch.device) -> tuple[float, str]:
    """``size`` bytes as a fraction of the device's memory, and as a phrase for the start-up line."""
    budget, where = memory_budget(device)
    return size / budget, f"{size / budget:.2%} of {fmt_bytes(budget)} {where}"


def share_that_fits(name: str, taking: str, stays: str, size: int, device: torch.device, limit: float,
                    on_device: bool | str) -> str | None:
    """The phrase of ``memory_share`` when ``size`` bytes fit in ``limit`` of the device's memory;
    None when they do not (said in one line: ``"{name}: {taking} ..., {stays} with the CPU loader"``),
    an error with ``on_device: true``."""
    fraction, share = memory_share(size, device)
    if fraction <= limit:
        return share
    msg = f"{name}: {taking} {fmt_bytes(size)} = {share}, more than device_memory_share {limit:.0%}"
    if on_device is True:
        raise ValueError(msg + " with on_device: true; raise device_memory_share or set on_device: auto")
    rank_zero_info(f"{msg}; {stays} with the CPU loader (on_device: auto)")
    return None


def check_finite(split: str, tensors: Mapping[str, Tensor], describe: Callable[[int], str]) -> None:
    """Raise naming the first samples (``describe(id)``) whose float tensors hold NaN or inf; run
    once on the CPU, before the tensors move to the device (the steps then read no input back)."""
    for key, t in tensors.items():
        if not t.is_floating_point():
            continue
        bad = (~torch.isfinite(t)).reshape(len(t), -1).any(1).nonzero().flatten()
        if len(bad):
            ids = tensors["ids"][bad[:5]].tolist() if "ids" in tensors else bad[:5].tolist()
            names = "; ".join(describe(int(i)) for i in ids)
            more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
            raise ValueError(f"{split} split: {names}{more}: non-finite values (NaN or inf) in {key!r}; "
                             "the data cannot go on the device (on_device) or train")


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000
    return f"{n:.1f} GB"
