"""The 1-D Nadaraya-Watson problem of d2l.ai sec. 11.2: y = 2 sin(x) + x^0.8 + noise.

Training: n points x ~ U(0, 5), each a query whose keys/values are the other training
points (leave-one-out, so the learned width cannot collapse onto the point itself).
Validation/test: two interleaved grids of queries over [0, 5) against all training points,
scored on the noise-free function. Its report (``pipelines/kernel_regression/reports.py``): the fits
(nonparametric w = 1 and the learned width) and the attention weights (queries x keys heatmaps).
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch.utils.data import DataLoader

from vecset.contracts.data_spec import DataSpec
from vecset.pipelines.data.base import VecsetDataModule


def target_fn(x: torch.Tensor) -> torch.Tensor:
    return 2 * torch.sin(x) + x ** 0.8


class KernelRegressionDataModule(VecsetDataModule):
    """Args:
        n_train: training points. noise: std of the Gaussian noise on training targets.
        grid_step: spacing of the val/test query grid over [0, x_max). seed: data seed.
    Batch: ``query`` (B,), ``keys`` (B, K), ``values`` (B, K), ``y`` (B,), ``ids`` (B,).
    """

    def __init__(self, n_train: int = 50, noise: float = 0.5, x_max: float = 5.0, grid_step: float = 0.1,
                 seed: int = 0, batch_size: int = 50) -> None:
        super().__init__()
        if n_train < 2:
            raise ValueError(f"n_train must be >= 2 (leave-one-out needs another point), got {n_train}")
        self.n_train, self.noise, self.x_max, self.grid_step = n_train, noise, x_max, grid_step
        self.seed, self.batch_size = seed, batch_size
        self.splits: dict[str, list[dict]] = {}

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        g = torch.Generator().manual_seed(self.seed)
        x = torch.sort(torch.rand(self.n_train, generator=g) * self.x_max).values
        y = target_fn(x) + torch.randn(self.n_train, generator=g) * self.noise
        self.x_train, self.y_train = x, y
        idx = torch.arange(self.n_train)
        train = [{"id": i, "query": x[i], "keys": x[idx != i], "values": y[idx != i], "y": y[i]}
                 for i in range(self.n_train)]
        # validation queries sit halfway between the test grid's, so model selection never sees test points
        self.grid = torch.arange(0, self.x_max, self.grid_step)
        val_grid = self.grid + self.grid_step / 2
        # ids: training points, then validation queries, then test queries (an id names one point)
        n_val = len(val_grid)
        val = [{"id": self.n_train + j, "query": q, "keys": x, "values": y, "y": target_fn(q)}
               for j, q in enumerate(val_grid)]
        grid = [{"id": self.n_train + n_val + j, "query": q, "keys": x, "values": y, "y": target_fn(q)}
                for j, q in enumerate(self.grid)]
        self.val_grid = val_grid
        self.splits = {"train": train, "val": val, "test": grid}

    def data_spec(self, stage: str) -> DataSpec:
        spec = super().data_spec(stage)
        return replace(spec, train_targets=self.y_train) if spec.fit else spec

    @staticmethod
    def collate(items: list[dict]) -> dict:
        return {k: torch.stack([torch.as_tensor(it[k]) for it in items]) for k in ("query", "keys", "values", "y")} | {
            "ids": torch.tensor([it["id"] for it in items])}

    def _loader(self, split: str, shuffle: bool = False) -> DataLoader:
        return DataLoader(self.splits[split], batch_size=self.batch_size, shuffle=shuffle, collate_fn=self.collate)

    def describe(self, sample_id: int) -> str:
        if sample_id < self.n_train:
            return f"training point {sample_id} (x={float(self.x_train[sample_id]):.3f})"
        j = sample_id - self.n_train
        if j < len(self.val_grid):
            return f"validation query x={float(self.val_grid[j]):.3f}"
        return f"test query x={float(self.grid[j - len(self.val_grid)]):.3f}"

    def test_items(self) -> list[dict]:
        """The test queries (the grid): dicts of ``query``, ``keys``, ``values``, ``y`` and ``id``."""
        return self.splits["test"]

    def default_reports(self) -> list:
        """The kernel's fits, attention and RMSEs."""
        from vecset.pipelines.kernel_regression.reports import (
            KernelRegressionReport,  # matplotlib: when asked
        )

        return [KernelRegressionReport()]
