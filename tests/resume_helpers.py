"""Helpers the subprocess tests load through a config's ``trainer.callbacks``."""

from __future__ import annotations

import time
from pathlib import Path

from pytorch_lightning.callbacks import Callback
from torch import nn

from vecset.contracts.vectorset import VectorSet
from vecset.encoders.contract import Encoder
from vecset.pipelines.data.synthetic import SyntheticSetDataModule


class PauseAtStep(Callback):
    """At the start of global step ``step``, write ``marker`` and hang, so that the test can
    SIGKILL the process at a known point (mid-epoch, after a checkpoint was written)."""

    def __init__(self, step: int, marker: str) -> None:
        self.step, self.marker = step, marker

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        if trainer.global_step == self.step:
            Path(self.marker).write_text(f"{trainer.current_epoch} {batch_idx}")
            time.sleep(600)



class OtherEncoder(Encoder):
    """Stands for 'another encoder' in the checkpoint-mismatch test."""

    def __init__(self, in_dim: int, d_model: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, d_model), nn.GELU())

    def forward(self, batch: dict) -> VectorSet:
        return VectorSet(x=self.mlp(batch["x"]), mask=batch["mask"])


class PoisonedSets(SyntheticSetDataModule):
    """The synthetic sets with ``value`` (NaN, inf) written into sample ``poison_id``."""

    def __init__(self, poison_id: int, value: float) -> None:
        super().__init__(n_train=64, n_val=16, n_test=16, batch_size=16)
        self.poison_id, self.value = poison_id, value

    def setup(self, stage: str | None = None) -> None:
        super().setup(stage)
        self.sets["train"].items[self.poison_id]["x"][0, 0] = self.value


class FailingSetupData(SyntheticSetDataModule):
    """SyntheticSetDataModule whose setup fails (a missing file, a bad column): a fit that ends
    before it has written anything into its run directory."""

    def setup(self, stage: str | None = None) -> None:
        raise FileNotFoundError("the data is missing, on purpose (tests/resume_helpers.py)")


class StopAtStep(Callback):
    """At the start of global step ``step``, stop the run as SIGTERM does (``SystemExit(143)``,
    pipelines/signals.py): a run stopped before its first checkpoint when ``step`` comes before it."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        if trainer.global_step == self.step:
            raise SystemExit(143)
