"""Samplers for exact resuming and for exact metrics on several processes.

- ``ResumableSampler``: the training order is a function of (seed, epoch) only
  (``DistributedSampler``'s shuffle), sharded across processes, and it can start in the
  middle of an epoch; ``pipelines.callbacks.ResumeState`` tells it where. Being a
  ``DistributedSampler``, Lightning keeps it instead of injecting its own under DDP.
- ``eval_sampler``: under DDP, Lightning's default ``DistributedSampler`` pads the last
  shard with repeated samples so every process gets as many batches; those repeats would
  count twice in validation/test metrics. This gives every process a disjoint share
  (Lightning's ``UnrepeatedDistributedSampler``) and picks a batch size that keeps the number
  of batches equal on every process: DDP broadcasts buffers on every forward pass, so one
  process running one extra batch would hang the others.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterator, Sized

import torch.distributed as dist
from pytorch_lightning.overrides.distributed import UnrepeatedDistributedSampler
from torch.utils.data import DistributedSampler

log = logging.getLogger(__name__)


def world() -> tuple[int, int]:
    """(number of processes, this process's rank); (1, 0) without torch.distributed."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return 1, 0


class ResumableSampler(DistributedSampler):
    """Shuffled (or ordered) indices of one process's shard; the permutation of epoch ``e`` is
    ``randperm(len, seed + e)``, so a resumed run sees the same order as an uninterrupted one.

    Args:
        dataset: a sized dataset.
        shuffle: shuffle every epoch.
        seed: shuffle seed; default: the seed given to ``seed_everything`` (``PL_GLOBAL_SEED``).
        drop_last: drop the tail instead of padding it to an equal share per process.
    """

    def __init__(self, dataset: Sized, shuffle: bool = True, seed: int | None = None, drop_last: bool = False) -> None:
        replicas, rank = world()
        if seed is None:
            seed = int(os.environ.get("PL_GLOBAL_SEED", 0))
        super().__init__(dataset, num_replicas=replicas, rank=rank, shuffle=shuffle, seed=seed, drop_last=drop_last)
        self._resume_epoch: int | None = None
        self._resume_skip = 0

    def resume_at(self, epoch: int, skip: int) -> None:
        """In epoch ``epoch``, leave out the first ``skip`` indices of this shard (they were
        trained on before the checkpoint). Applies once."""
        self._resume_epoch, self._resume_skip = epoch, skip

    def __iter__(self) -> Iterator[int]:
        indices = list(super().__iter__())
        if self._resume_epoch is not None and self._resume_epoch == self.epoch:
            indices = indices[self._resume_skip:]
            self._resume_epoch, self._resume_skip = None, 0
        return iter(indices)


def even_eval_batch_size(shard_sizes: list[int], batch_size: int) -> int | None:
    """The largest batch size <= ``batch_size`` that gives every shard the same number of
    batches; else the smallest one up to ``2 * batch_size``; else None."""
    for b in [*range(batch_size, 0, -1), *range(batch_size + 1, 2 * batch_size + 1)]:
        if len({math.ceil(n / b) for n in shard_sizes}) == 1:
            return b
    return None


def eval_sampler(dataset: Sized, batch_size: int) -> tuple[DistributedSampler | None, int]:
    """``(sampler, batch_size)`` for a validation/test/predict DataLoader: ``(None,
    batch_size)`` in one process; under torch.distributed a disjoint share per process with
    an equal number of batches. Falls back to Lightning's padded sampler (repeats counted,
    logged) only when no batch size gives equal counts (fewer samples than processes)."""
    replicas, rank = world()
    if replicas == 1:
        return None, batch_size
    n = len(dataset)
    shards = [len(range(r, n, replicas)) for r in range(replicas)]
    b = even_eval_batch_size(shards, batch_size) if min(shards) > 0 else None
    if b is None:
        pad = math.ceil(n / replicas) * replicas - n
        log.warning("evaluation set of %d samples on %d processes: %d samples are repeated to fill the shards "
                    "and count twice in the metrics", n, replicas, pad)
        return DistributedSampler(dataset, num_replicas=replicas, rank=rank, shuffle=False), batch_size
    if b != batch_size:
        log.info("evaluation batch size %d -> %d so that all %d processes run %d batches",
                 batch_size, b, replicas, math.ceil(shards[0] / b))
    return UnrepeatedDistributedSampler(dataset, num_replicas=replicas, rank=rank, shuffle=False), b
