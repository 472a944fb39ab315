"""A tiny synthetic set task that needs attention: label each vector by whether its
value is larger than the mean of its set (the answer depends on the whole set)."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

import torch
from torch.utils.data import DataLoader, Dataset

from vecset.contracts.data_spec import DataSpec
from vecset.encoders.collate import pad_sets
from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.data.samplers import ResumableSampler, eval_sampler


class AboveMeanSets(Dataset):
    """Sets of scalars ``v`` drawn around a per-set offset; label = v > mean(set)
    (``target="above_mean"``, one label per vector) or the set's mean (``target="mean"``,
    one regression value per set).

    Each vector is (v, 1): the constant lets a projection separate content from bias.
    """

    def __init__(self, n: int, min_len: int, max_len: int, seed: int, target: str = "above_mean") -> None:
        g = torch.Generator().manual_seed(seed)
        self.items = []
        for i in range(n):
            length = int(torch.randint(min_len, max_len + 1, (1,), generator=g))
            offset = torch.randn(1, generator=g) * 2
            v = offset + torch.randn(length, generator=g)
            x = torch.stack([v, torch.ones(length)], dim=1)
            y = (v > v.mean()).long() if target == "above_mean" else v.mean().reshape(1)
            self.items.append({"x": x, "y": y, "id": i})

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        return self.items[i]


class SyntheticSetDataModule(VecsetDataModule):
    """Above-the-mean labeling on random sets (the debug job).

    Args:
        n_train, n_val, n_test: number of sets per split (each at least 1).
        min_len, max_len: set sizes, drawn uniformly.
        batch_size: sets per batch.
        seed: data seed (splits use seed, seed+1, seed+2).
        target: ``above_mean`` (label each vector) or ``mean`` (regress the set's mean).
    """

    def __init__(self, n_train: int = 2000, n_val: int = 200, n_test: int = 200, min_len: int = 4,
                 max_len: int = 16, batch_size: int = 64, seed: int = 0,
                 target: Literal["above_mean", "mean"] = "above_mean") -> None:
        super().__init__()
        if min_len < 1 or max_len < min_len:
            raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
        self.n = {"train": n_train, "val": n_val, "test": n_test}
        for split, n in self.n.items():  # an empty training split would test an untrained model
            if n < 1:
                raise ValueError(f"SyntheticSetDataModule: n_{split} must be >= 1 (sets in the {split} split), got {n}")
        self.min_len, self.max_len, self.batch_size, self.seed = min_len, max_len, batch_size, seed
        self.target = target
        self.class_names = ["below", "above"] if target == "above_mean" else None
        self.target_names = ["mean"]
        self.sets: dict[str, AboveMeanSets] = {}

    def setup(self, stage: str | None = None) -> None:
        for k, (split, n) in enumerate(self.n.items()):
            if split not in self.sets:
                self.sets[split] = AboveMeanSets(n, self.min_len, self.max_len, self.seed + k, self.target)

    def data_spec(self, stage: str) -> DataSpec:
        spec = super().data_spec(stage)
        if spec.fit and self.target == "mean":  # the regression scaler's targets
            spec = replace(spec, train_targets=torch.cat([it["y"] for it in self.sets["train"].items]))
        return spec

    def test_items(self) -> list[dict]:
        """The test sets: dicts of ``x`` (n, 1), ``y`` and ``id``."""
        return self.sets["test"].items

    def _loader(self, split: str, shuffle: bool = False) -> DataLoader:  # evaluation splits only
        # a disjoint share per process under DDP, so no sample counts twice in the metrics
        sampler, batch_size = eval_sampler(self.sets[split], self.batch_size)
        return DataLoader(self.sets[split], batch_size=batch_size, sampler=sampler, collate_fn=pad_sets,
                          generator=torch.Generator().manual_seed(self.seed))

    def train_dataloader(self) -> DataLoader:
        # order = f(seed, epoch), resumable mid-epoch; its own generator keeps the global RNG
        # (dropout) independent of how often loaders are (re)built
        return DataLoader(self.sets["train"], batch_size=self.batch_size, sampler=ResumableSampler(self.sets["train"]),
                          collate_fn=pad_sets, generator=torch.Generator().manual_seed(self.seed))

