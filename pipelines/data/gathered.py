"""Variable-length sets resident on the training device, gathered into padded batches there; and
length buckets, the padded widths a batch may take.

Speech utterances and molecule graphs differ in length, so a batch's width N (its longest set,
or the bucket above it) is a shape the host must know to gather. The order is therefore drawn
on the host (a ``ResumableSampler``: seeded by (seed, epoch), every set once an epoch, sharded
under DDP, resumable mid-epoch) and the lengths are kept there too (a few KB), so nothing is
read back from the device. ``speech/device.py`` (frames) and ``molecules/device.py`` (graphs)
hold the resident tensors and their ``gather``; ``GatherLoader`` draws the batches.

``LengthBuckets``: with ``torch.compile`` (or CUDA graphs) every new input shape is a new
compilation; padding each batch to one of a few fixed widths (powers of two, or given edges)
instead of its own maximum makes the shapes repeat. The padding is masked, so the real
positions' outputs are those of the unbucketed batch. ``bucket_batches`` goes further: each
training batch is drawn from one bucket (sets of similar length together: less padding), the
batches of the epoch in a seeded order (as in Lhoest et al.'s and torchaudio's bucketing
samplers).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Literal, Protocol

import numpy as np
import torch
from pytorch_lightning.utilities import rank_zero_info

from vecset.pipelines.data.device_loader import BatchTransform, batch_seed, eval_order
from vecset.pipelines.data.samplers import ResumableSampler

BucketSpec = Literal["pow2"] | list[int] | None


class LengthBuckets:
    """The padded width of a batch whose longest set has ``n`` vectors.

    Args:
        spec: None (the batch's own longest set), ``"pow2"`` (the next power of two, at least
            ``min_length``) or increasing positive edges ``[16, 32, 64]`` (the smallest edge that
            holds it; a set longer than the last edge pads to its own length, counted by
            ``beyond``).
        option: the option's name, for the messages.
    """

    def __init__(self, spec: BucketSpec, option: str = "length_buckets", min_length: int = 8) -> None:
        if spec is not None and spec != "pow2":
            if (not isinstance(spec, (list, tuple)) or not spec or not all(isinstance(e, int) and e > 0 for e in spec)
                    or list(spec) != sorted(set(spec))):
                raise ValueError(f"{option} must be null, 'pow2' or increasing positive integers (e.g. [16, 32, 64]), "
                                 f"got {spec!r}")
        self.spec, self.option, self.min_length = (list(spec) if isinstance(spec, (list, tuple)) else spec), option, \
            min_length

    @property
    def on(self) -> bool:
        return self.spec is not None

    def length(self, n: int) -> int:
        """The width a batch whose longest set has ``n`` vectors is padded to (>= n)."""
        if self.spec is None:
            return n
        if self.spec == "pow2":
            return max(self.min_length, 1 << max(n - 1, 0).bit_length())
        for edge in self.spec:
            if n <= edge:
                return edge
        return n

    def beyond(self, lengths: Sequence[int]) -> int:
        """How many of ``lengths`` are longer than the last edge (they pad to their batch's own length)."""
        return sum(n > self.spec[-1] for n in lengths) if isinstance(self.spec, list) else 0

    def describe(self, lengths: Sequence[int]) -> str:
        """The widths these lengths pad to, for the start-up line."""
        if self.spec is None:
            return "each batch padded to its longest set"
        widths = sorted({self.length(n) for n in lengths})
        out = f"batches padded to {self.option} {self.spec} (widths {widths})"
        if (k := self.beyond(lengths)):
            out += f"; {k} sets longer than {self.spec[-1]} pad to their batch's own length"
        return out


def pad_to(batch: dict, width: int, fills: dict[str, tuple[float | bool, tuple[int, ...]]]) -> dict:
    """``batch`` with each tensor of ``fills`` padded with its value along its dims to ``width``;
    ``padded`` set when the width grew. A classic collate's batch into a bucketed one.

    Shapes: x (B, N, F) -> (B, width, F) with fills {"x": (0, (1,))}; dist (B, N, N) with (1, 2)."""
    n = batch["mask"].shape[1]
    if width == n:
        return batch
    out = dict(batch)
    for key, (value, dims) in fills.items():
        if key not in batch:
            continue
        t = batch[key]
        shape = list(t.shape)
        for d in dims:
            shape[d] = width
        new = torch.full(shape, value, dtype=t.dtype)
        new[tuple(slice(0, s) for s in t.shape)] = t
        out[key] = new
    out["padded"] = True
    return out


class BucketedCollate:
    """A classic collate, then each batch padded to its bucket (``pad_to``); picklable for workers."""

    def __init__(self, collate: Callable[[list], dict], buckets: LengthBuckets,
                 fills: dict[str, tuple[float | bool, tuple[int, ...]]]) -> None:
        self.collate, self.buckets, self.fills = collate, buckets, fills

    def __call__(self, items: list) -> dict:
        batch = self.collate(items)
        return pad_to(batch, self.buckets.length(batch["mask"].shape[1]), self.fills)


class Resident(Protocol):
    """What ``GatherLoader`` reads from a split's resident tensors."""

    host_lengths: list[int]
    device: torch.device

    def __len__(self) -> int: ...

    def gather(self, rows: list[int], width: int) -> dict: ...


def bucket_batches(order: Sequence[int], lengths: Sequence[int], buckets: LengthBuckets, batch_size: int,
                   seed: int, epoch: int) -> list[list[int]]:
    """``order`` grouped by bucket (keeping its order within each), cut into batches of
    ``batch_size`` (each bucket's last one short), the batches then in a seeded order of
    (seed, epoch): every index once, each batch within one bucket."""
    groups: dict[int, list[int]] = {}
    for i in order:
        groups.setdefault(buckets.length(lengths[i]), []).append(i)
    batches = [g[s:s + batch_size] for _, g in sorted(groups.items()) for s in range(0, len(g), batch_size)]
    perm = np.random.default_rng([seed, epoch, 1]).permutation(len(batches))
    return [batches[k] for k in perm]


class GatherLoader:
    """Batches of resident sets. Training (``sampler``, a ``ResumableSampler`` over the sets: the
    order on the host): each epoch its order in batches of ``batch_size``, the last one short
    (or, with ``within_buckets``, ``bucket_batches`` of it); evaluation (``order`` given, host
    ints). Each batch is padded to ``buckets.length`` of its longest set, then goes through
    ``transforms`` with a generator on the device seeded by ``batch_seed``.

    It has what Lightning and ``ResumeState`` read from a ``DataLoader``: ``len()``,
    ``batch_size``, ``sampler`` (``set_epoch``, ``resume_at``: a resume skips whole batches)."""

    def __init__(self, resident: Resident, batch_size: int, sampler: ResumableSampler | None = None,
                 order: list[int] | None = None, transforms: Sequence[BatchTransform] = (),
                 buckets: LengthBuckets | None = None, within_buckets: bool = False) -> None:
        if (sampler is None) == (order is None):
            raise ValueError(f"{type(self).__name__} needs exactly one of sampler (training) or order (evaluation)")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.buckets = buckets or LengthBuckets(None)
        if within_buckets and not self.buckets.on:
            raise ValueError("bucket_batches needs length_buckets ('pow2' or edges)")
        if within_buckets and sampler is not None and sampler.num_replicas > 1:
            # each process would draw its own number of batches, and DDP's collectives would hang
            raise ValueError(f"bucket_batches runs in one process; this run has {sampler.num_replicas}")
        self.resident, self.batch_size, self.sampler, self.order = resident, batch_size, sampler, order
        self.transforms, self.within_buckets = list(transforms), within_buckets and sampler is not None
        self.batch_sampler = None  # the indices come from ``sampler``

    def __len__(self) -> int:
        if self.within_buckets:
            counts: dict[int, int] = {}
            for n in self.resident.host_lengths:
                counts[self.buckets.length(n)] = counts.get(self.buckets.length(n), 0) + 1
            return sum(math.ceil(c / self.batch_size) for c in counts.values())
        n = len(self.sampler) if self.sampler is not None else len(self.order)
        return math.ceil(n / self.batch_size)

    def _batches(self) -> tuple[list[list[int]], int, int, int, int]:
        """(this epoch's batches from the resume point, the first one's number, epoch, rank, seed)."""
        if self.sampler is None:
            return [self.order[s:s + self.batch_size] for s in range(0, len(self.order), self.batch_size)], 0, 0, 0, 0
        s = self.sampler
        # the batch number from the epoch's start, across a resume (the augmentation of batch
        # k is the same whether or not the run was interrupted)
        first = (s._resume_skip // self.batch_size) if s._resume_epoch == s.epoch else 0
        if self.within_buckets:
            full = list(super(ResumableSampler, s).__iter__())  # the whole epoch: batches are formed from it
            s._resume_epoch, s._resume_skip = None, 0
            batches = bucket_batches(full, self.resident.host_lengths, self.buckets, self.batch_size, s.seed,
                                     s.epoch)[first:]
        else:
            order = list(s)
            batches = [order[k:k + self.batch_size] for k in range(0, len(order), self.batch_size)]
        return batches, first, s.epoch, s.rank, s.seed

    def __iter__(self) -> Iterator[dict]:
        batches, first, epoch, rank, seed = self._batches()
        g = torch.Generator(device=self.resident.device) if self.transforms else None
        lengths = self.resident.host_lengths
        for k, rows in enumerate(batches):
            batch = self.resident.gather(rows, self.buckets.length(max(lengths[r] for r in rows)))
            if g is not None:
                g.manual_seed(batch_seed(seed, epoch, first + k, rank))
                for transform in self.transforms:
                    batch = transform(batch, g)
            yield batch


def gather_loader(cls: type[GatherLoader], resident: Resident, batch_size: int, train: bool, shuffle: bool,
                  transforms: Sequence[BatchTransform] = (), buckets: LengthBuckets | None = None,
                  within_buckets: bool = False) -> GatherLoader:
    """Training: a ``ResumableSampler`` order (seed: ``seed_everything``'s); evaluation: 0..n-1
    (under DDP each process's disjoint share, with ``eval_sampler``'s even batch size)."""
    if train:
        return cls(resident, batch_size, sampler=ResumableSampler(range(len(resident)), shuffle=shuffle),
                   transforms=transforms, buckets=buckets, within_buckets=within_buckets)
    order, bs = eval_order(len(resident), batch_size, torch.device("cpu"))
    return cls(resident, bs, order=order.tolist(), transforms=transforms, buckets=buckets)


__all__ = ["BucketSpec", "BucketedCollate", "GatherLoader", "LengthBuckets", "bucket_batches", "gather_loader",
           "pad_to"]


class Placement:
    """Where a data module's splits live: decided once, at the first loader (``_place``: every
    split packed on the device, said in one line, or None for the classic DataLoader); ``placed``
    gives a split's resident data there, packing a split set up after the decision (``pack``).

    Args: the data module's ``on_device``, ``device_memory_share``, ``length_buckets`` (a
    ``LengthBuckets``) and ``bucket_batches``."""

    def __init__(self, on_device: bool | str, device_memory_share: float, buckets: LengthBuckets,
                 within_buckets: bool) -> None:
        if on_device not in (True, False, "auto"):
            raise ValueError(f"on_device must be true, false or auto, got {on_device!r}")
        if not 0 < device_memory_share <= 1:
            raise ValueError(f"device_memory_share must be in (0, 1], got {device_memory_share}")
        if within_buckets and not buckets.on:
            raise ValueError("bucket_batches needs length_buckets ('pow2' or edges), got length_buckets: null")
        if within_buckets and on_device is False:
            raise ValueError("bucket_batches draws the batches of the data on the device: it needs on_device true or "
                             "auto, got on_device: false")
        self.on_device, self.device_memory_share = on_device, device_memory_share
        self.buckets, self.within_buckets = buckets, within_buckets
        self.resident: dict | None = None
        self._decided = False

    def placed(self, dm, split: str, device: torch.device):
        """The split's data on ``device``, or None: the classic loader (which pads to the length
        buckets too; bucket_batches then says once that it is off)."""
        if not self._decided:
            self._decided = True
            self.resident = self._place(dm, device)
            if self.resident is None and self.within_buckets:
                rank_zero_info(f"{type(dm).__name__}: bucket_batches is off with the CPU loader (the batches are "
                               "drawn as usual, each padded to its length bucket)")
        if self.resident is None:
            return None
        if split not in self.resident:  # a split set up after the decision (test after fit)
            self.resident[split] = self.pack(dm, split).to(device)
        return self.resident[split]

    def pack(self, dm, split: str):
        """A split packed and checked on the CPU."""
        raise NotImplementedError

    def _place(self, dm, device: torch.device) -> dict | None:
        """Every split on ``device`` (said in one line), or None where they stay on the CPU."""
        raise NotImplementedError

    def bucket_note(self, lengths: Sequence[int]) -> str:
        """The length buckets' part of the start-up line ('' without buckets)."""
        if not self.buckets.on:
            return ""
        within = "; training batches drawn within one bucket each (bucket_batches)" if self.within_buckets else ""
        return f"; {self.buckets.describe(lengths)}{within}"
