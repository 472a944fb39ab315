"""The time-series predictor: series -> their class (``vecset.pretrained("japanese_vowels")``,
``vecset predict --model japanese_vowels --series a.csv``, a run or packed folder of this job)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from vecset.pipelines.predictor import Predictor


class SeriesPredictor(Predictor):
    """Series -> the class and its probability. An input is a series CSV file (a header naming
    the training channels, one row per time step: ``encoders/timeseries/reading.py`` reads it and
    names the line of any bad value) or an array (T, C) of the training channels, any length.

    ``extra``: ``classes`` and ``channels`` (the training files' header, which every input repeats)."""

    input_column, input_flag = "series", "--series"
    values = ["prediction", "probability"]

    def __init__(self, name: str, path: Path, bundle: dict, card: dict) -> None:
        super().__init__(name, path, bundle, card)
        self.classes: list[str] = self.extra["classes"]
        self.channels: list[str] = self.extra["channels"]

    def describe(self, value: Any) -> str:
        return str(value) if isinstance(value, str | Path) else f"array{list(np.shape(value))}"

    def prepare(self, value: Any) -> torch.Tensor:
        from vecset.encoders.timeseries import read_series

        if isinstance(value, str | Path):
            if not Path(value).is_file():
                raise ValueError(f"{value}: no such series file")
            x, _ = read_series(Path(value), self.channels)  # ValueError naming the file and line
            return x
        x = torch.as_tensor(np.asarray(value, dtype=np.float64)).float()
        if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] != len(self.channels):
            raise ValueError(f"expected a series of shape [T, {len(self.channels)}] (T >= 1 steps of the channels "
                             f"{', '.join(self.channels)}), got shape {list(x.shape)}")
        if not torch.isfinite(x).all():
            raise ValueError("a series of finite numbers (NaN and infinity are not values a model can read)")
        return x

    def run(self, items: list[torch.Tensor]) -> list[dict]:
        from vecset.encoders.timeseries import collate_series

        prob = self.model(collate_series([{"x": x, "id": i} for i, x in enumerate(items)])).float().softmax(-1)
        p, k = prob.max(-1)
        return [{"prediction": self.classes[i], "probability": v} for i, v in zip(k.tolist(), p.tolist(), strict=True)]

    @classmethod
    def pack_extra(cls, config: dict) -> tuple[dict, dict]:
        """The classes and channels of the run's data; its test series files and their labels."""
        from vecset.pipelines.timeseries.data import TimeSeriesDataModule

        dm = TimeSeriesDataModule(**dict(config["data"].get("init_args") or {}))
        dm.setup("fit")
        test = dm.splits["test"]
        return {"classes": dm.class_names, "channels": dm.channels}, {
            "inputs": [str(dm.root / dm.describe(it["id"])) for it in test],
            "targets": [dm.label_of(it["id"]) for it in test]}


__all__ = ["SeriesPredictor"]
