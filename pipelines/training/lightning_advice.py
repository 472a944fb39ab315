"""Lightning's messages that do not apply to a vecset run (advertising tips, warnings about what
vecset does on purpose), each silenced exactly, by its text: every other warning still shows."""

from __future__ import annotations

import logging
import warnings

from pytorch_lightning.utilities.warnings import PossibleUserWarning


class _CloudTips(logging.Filter):
    """Drops Lightning 2.6's "💡 Tip: For seamless cloud ..." lines (litlogger, litmodels),
    logged on every run: advertising for Lightning's hosted services, not about the run; and
    its note that the model's ModelCheckpoint replaces the Trainer's default one: vecset's
    TaskModule/MultiTaskModule always configure theirs (best and last), on purpose."""

    REPLACED_DEFAULT = ("The following callbacks returned in `LightningModule.configure_callbacks` will override "
                        "existing callbacks passed to Trainer: ModelCheckpoint")

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not (msg.startswith("💡 Tip: For seamless cloud") or msg == self.REPLACED_DEFAULT)


def silence_inapplicable_advice(resuming: bool) -> None:
    """Lightning's messages that do not apply to a vecset run, each silenced exactly. Warning
    filters are added to the current ``warnings.catch_warnings`` scope (run_cli's); the tips'
    logging filter stays installed (they are never about a run)."""
    for name in ("pytorch_lightning.utilities.rank_zero", "lightning_fabric.utilities.rank_zero"):
        logger = logging.getLogger(name)  # rank_zero_info logs through one of these
        if not any(isinstance(f, _CloudTips) for f in logger.filters):
            logger.addFilter(_CloudTips())
    # Lightning guesses from the loader's type (no state_dict) that a mid-epoch resume cannot
    # be exact; ResumeState (a CLI default) positions a ResumableSampler and warns itself when a
    # train loader has none ("this epoch's data starts over")
    warnings.filterwarnings("ignore", category=PossibleUserWarning,
                            message="You're resuming from a checkpoint that ended before the epoch ended and "
                                    "your dataloader is not resumable")
    # Lightning 2.6's own pytree helper builds torch's deprecated LeafSpec (a FutureWarning on
    # every fit); nothing in a run or a config can change it
    warnings.filterwarnings("ignore", category=FutureWarning, message=r"`isinstance\(treespec, LeafSpec\)` is deprecated")
    # speech predict batches chunks with its own sampler, which yields every chunk once (tests/
    # pipelines/predict/test_speech_chunked_predict.py); Lightning cannot know and warns on every predict
    warnings.filterwarnings("ignore", category=UserWarning,
                            message=r"You are using a custom batch sampler `ChunkBatches` for prediction")
    # the start-up line says it: "precision: bf16-mixed (16-mixed was asked: Lightning runs bf16-mixed instead ...)"
    warnings.filterwarnings("ignore", category=UserWarning,
                            message=r"You passed `Trainer\(accelerator='cpu', precision='16-mixed'\)` but AMP with fp16")
    # the task modules check batches on the host there (label ranges, NonFiniteGuard) on purpose;
    # a data module's own hook would win over it, and Lightning says so in its other warning
    warnings.filterwarnings("ignore", category=UserWarning,
                            message=r"You have overridden `on_before_batch_transfer` in `LightningModule` but have "
                                    r"passed in a `LightningDataModule`")
    # bf16-mixed keeps fp32 weights, so the summary's 32-bit size estimate is right (trainer.precision: auto)
    warnings.filterwarnings("ignore", category=UserWarning,
                            message=r"Precision bf16-mixed is not supported by the model summary")
    if resuming:
        # --ckpt_path last continues the run directory on purpose: its checkpoints/ is in use
        warnings.filterwarnings("ignore", category=UserWarning,
                                message=r"Checkpoint directory .* exists and is not empty\.$")
