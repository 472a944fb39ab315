"""The learning rate Lightning's ``LearningRateFinder`` found, used by every step and recorded.

Lightning's finder (a range test: Smith, "Cyclical Learning Rates for Training Neural Networks",
2017, https://arxiv.org/abs/1506.01186) runs at the start of fit, after the optimizer and its
schedule were built from the configured ``lr``. It sets the model's ``lr`` (``hparams.lr``) and
the optimizer's current rate to its suggestion, but a schedule keeps the rates it was built with
(``LambdaLR``'s ``base_lrs``): the first step ran at the found rate, every later one at the
configured rate times the schedule; and the run's saved ``config.yaml`` kept the configured rate.

``FoundLearningRate`` (a default callback of the ``vecset`` command, after any finder: Lightning
runs tuner callbacks first) rebuilds the optimizer and schedule from the model's ``lr`` once a
finder has set it (the model's ``configure_optimizers``, as at the start of fit; a resumed fit
then loads the checkpoint's optimizer and schedule states into them, as it would have), and
writes the found rate into the run's ``config.yaml`` (``model.init_args.lr``). ``lr`` holds it
for ``results.json``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytorch_lightning as pl
from pytorch_lightning.callbacks import LearningRateFinder
from pytorch_lightning.cli import SaveConfigCallback

log = logging.getLogger(__name__)


class FoundLearningRate(pl.Callback):
    """After a ``LearningRateFinder`` set the model's ``lr`` at the start of fit: the optimizer
    and schedule rebuilt with it, and the run's ``config.yaml`` holding it (see the module
    docstring). Does nothing in a fit without a finder, or when the finder found nothing."""

    def __init__(self) -> None:
        self.lr: float | None = None  # the found rate every step is scheduled from

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        finders = [c for c in trainer.callbacks if isinstance(c, LearningRateFinder)]
        if not finders:
            return
        found = finders[-1].optimal_lr
        # asked again quietly: Lightning logged its own "Failed to compute suggestion" when it asked
        quiet = logging.getLogger("pytorch_lightning.tuner.lr_finder")
        level, quiet.level = quiet.level, logging.CRITICAL
        try:
            suggestion = found.suggestion() if found is not None else None
        finally:
            quiet.setLevel(level)
        if suggestion is None:
            points = len(found.results.get("lr", [])) if found is not None else 0
            configured = pl_module.hparams.get("lr") if "lr" in pl_module.hparams else None
            kept = f"the configured lr {configured:g}" if configured is not None else "the configured learning rate"
            # Lightning's suggestion skips the first 10 points and the last, and needs 2 finite losses
            why = (f"{points} points measured, its suggestion needs at least 13: raise its num_training_steps"
                   if points < 13 else f"fewer than 2 finite losses among its {points} points")
            if trainer.is_global_zero:
                print(f"vecset: the learning-rate finder found no rate ({why}); training keeps {kept}", flush=True)
            return
        # the model's lr is the suggestion now (Lightning set it); configure_optimizers reads it
        trainer.strategy.setup_optimizers(trainer)
        trainer.strategy.setup_precision_plugin()
        if "lr" not in pl_module.hparams:
            return  # a module of one's own, with its rate elsewhere: its optimizer still got it
        self.lr = float(pl_module.hparams.lr)
        for cb in trainer.callbacks:
            if isinstance(cb, SaveConfigCallback) and cb.save_to_log_dir:
                save_found_lr(trainer, cb, self.lr)


def save_found_lr(trainer: pl.Trainer, cb: SaveConfigCallback, lr: float) -> None:
    """The run's saved config (``cb``'s file in the log directory) with ``model.init_args.lr`` =
    ``lr``, so that a rerun from it trains at the found rate."""
    if "model.init_args.lr" not in cb.config:
        return
    cb.config["model.init_args.lr"] = lr
    path = Path(trainer.log_dir) / cb.config_filename  # a broadcast under DDP: every process asks
    if trainer.is_global_zero:
        cb.parser.save(cb.config, str(path), skip_none=False, overwrite=True, multifile=cb.multifile)
        log.info("learning rate %s (found) written into %s", lr, path)
