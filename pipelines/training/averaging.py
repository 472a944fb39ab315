"""Weight averaging for training: Lightning's callbacks (an exponential moving average, EMA, as
timm's ``ModelEmaV3``; or the equal-weight average of SWA, Izmailov et al. 2018, "Averaging
Weights Leads to Wider Optima and Better Generalization"), with the averaged weights used for
every evaluation of the run.

Lightning 2.6's ``WeightAveraging`` validates with the averaged weights, saves them as the
checkpoint's ``state_dict`` (the training weights under ``current_model_state``) and copies them
into the model when training ends. But when the same trainer then loads a checkpoint to test it
(``vecset fit`` tests its best checkpoint), the callback's ``on_load_checkpoint`` puts the
*training* weights back into the model (it restores a resumed fit): the test would score other
weights than the validation that chose the checkpoint. Here a checkpoint loaded outside fit keeps
its ``state_dict``, the averaged weights (tests/pipelines/training/test_weight_averaging.py holds
both behaviours).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytorch_lightning as pl
from pytorch_lightning.callbacks import EMAWeightAveraging as LightningEMA
from pytorch_lightning.callbacks import WeightAveraging as LightningWeightAveraging
from pytorch_lightning.trainer.states import TrainerFn


class _EvaluateAveraged:
    def on_load_checkpoint(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        if trainer.state.fn != TrainerFn.FITTING:
            return  # test / validate / predict: the model holds the checkpoint's averaged state_dict
        super().on_load_checkpoint(trainer, pl_module, checkpoint)


class EMAWeightAveraging(_EvaluateAveraged, LightningEMA):
    """An exponential moving average of the weights, updated after every optimizer step:
    avg = decay x avg + (1 - decay) x weights. It averages over about 1 / (1 - decay) steps:
    keep that well below the run's step count (0.999 for tens of thousands of steps; 0.99 for a
    run of a few hundred). Arguments as Lightning's ``EMAWeightAveraging`` (``decay``,
    ``update_every_n_steps``, ``update_starting_at_step``, ``update_starting_at_epoch``,
    ``use_buffers``)."""


class WeightAveraging(_EvaluateAveraged, LightningWeightAveraging):
    """Lightning's ``WeightAveraging``: by default the equal-weight average of the weights after
    every optimizer step (SWA's average, from the first step; ``avg_fn`` / ``multi_avg_fn`` give
    another, see ``torch.optim.swa_utils.AveragedModel``)."""


def warn_lightning_averaging(callbacks: list) -> None:
    """A warning per Lightning ``WeightAveraging`` callback (its ``EMAWeightAveraging`` too) that is
    not vecset's subclass: after fit, ``vecset fit`` tests the best checkpoint, and Lightning's
    callback puts the training weights back when it loads one, so the test would score other
    weights than the averaged ones the checkpoint was chosen by (this module's docstring)."""
    for cb in callbacks:
        if isinstance(cb, LightningWeightAveraging) and not isinstance(cb, _EvaluateAveraged):
            name = type(cb).__name__
            ours = "EMAWeightAveraging" if isinstance(cb, LightningEMA) else "WeightAveraging"
            warnings.warn(f"trainer.callbacks: {type(cb).__module__}.{name} tests the training weights after fit, not "
                          "the averaged ones the best checkpoint holds (its test score is another model's): use "
                          f"vecset.pipelines.training.averaging.{ours} (the same arguments)", UserWarning, stacklevel=2)
