"""Weight averaging for training: Lightning's callbacks (an exponential moving average, EMA, as
timm's ``ModelEmaV3``; or the equal-weight average of SWA, Izmailov et al. 2018, "Averaging
Weights Leads to Wider Optima and Better Generalization"), with the averaged weights used for
every evaluation of the run; and ``Lookahead`` (Zhang et al. 2019), which pulls the weights the
optimizer trains back toward a slow copy every k steps.

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
import torch
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


class Lookahead(pl.Callback):
    """Lookahead (Zhang et al. 2019, "Lookahead Optimizer: k steps forward, 1 step back"; one of
    airbench's tricks) around whatever optimizer the model has: slow weights phi start as the
    model's; every ``k`` optimizer steps phi <- phi + alpha (theta - phi) and the model's weights
    theta <- phi. The optimizer's state (AdamW's moments) is kept across the synchronizations.
    Validation scores the model's weights as they are (theta, at most k - 1 steps from phi). The
    slow weights are saved in the checkpoint and restored on resume.

    Args:
        k: optimizer steps between synchronizations (the paper's 5 or 10).
        alpha: the slow weights' step toward the fast ones, in (0, 1] (the paper's 0.5).
    """

    def __init__(self, k: int = 5, alpha: float = 0.5) -> None:
        if k < 1:
            raise ValueError(f"Lookahead: k must be at least 1, got {k}")
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"Lookahead: alpha must be in (0, 1], got {alpha}")
        self.k, self.alpha = int(k), float(alpha)
        self.slow: list[torch.Tensor] | None = None
        self._synced_at = 0  # the global step of the last synchronization

    def _params(self, pl_module: pl.LightningModule) -> list[torch.Tensor]:
        return [p for p in pl_module.parameters() if p.requires_grad]

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        params = self._params(pl_module)
        if self.slow is None:
            self.slow = [p.detach().clone() for p in params]
            self._synced_at = trainer.global_step
        else:  # restored from a checkpoint: onto the model's device
            self.slow = [s.to(p.device, p.dtype) for s, p in zip(self.slow, params, strict=True)]

    @torch.no_grad()
    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        step = trainer.global_step
        if step - self._synced_at < self.k:
            return
        for slow, fast in zip(self.slow, self._params(pl_module), strict=True):
            slow.add_(fast.detach() - slow, alpha=self.alpha)
            fast.copy_(slow)
        self._synced_at = step

    def state_dict(self) -> dict[str, Any]:
        return {"k": self.k, "alpha": self.alpha, "synced_at": self._synced_at,
                "slow": None if self.slow is None else [s.cpu() for s in self.slow]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.slow, self._synced_at = state_dict["slow"], state_dict["synced_at"]
