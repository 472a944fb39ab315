"""The hand-over, data -> model, once at setup: the data module's DataSpec goes to the
encoder and the head (TaskModule), or to each task's (MultiTaskModule)."""

from __future__ import annotations

from dataclasses import replace

import pytorch_lightning as pl
from pytorch_lightning.utilities import rank_zero_info

from vecset.contracts.data_spec import DataSpec
from vecset.encoders.contract import Encoder
from vecset.heads.contract import Head
from vecset.pipelines.config_errors import SettingError
from vecset.pipelines.data.base import VecsetDataModule


def hand_over(dm: pl.LightningDataModule, stage: str, encoder: Encoder, head: Head, task: str | None = None) -> DataSpec:
    """The one hand-over from data to model: the data module's DataSpec for ``stage`` goes to
    the encoder, then the head, which check it and take what they learn from it. A plain
    LightningDataModule describes nothing but its name (a head that needs more says so).
    What a part took is logged ("encoder vocabulary: 32 tokens from the training 'text'")."""
    if isinstance(dm, VecsetDataModule):
        spec = dm.data_spec(stage)
    else:
        spec = DataSpec(source=type(dm).__name__, fit=stage == "fit")
    spec = replace(spec, task=task)
    for name, part in (("encoder", encoder), ("head", head)):
        try:
            took = part.receive(spec)
        except ValueError as ex:  # the model's settings and the data's disagree: the user's config, one line
            raise SettingError(str(ex)) from ex
        if took:
            rank_zero_info(f"{spec.where}{name} {took}")
    return spec
