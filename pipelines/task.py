"""TaskModule: encoder + backbone + head, injected, trained with Lightning."""

from __future__ import annotations

import math

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.core.mixins.hparams_mixin import _given_hyperparameters
from torch import Tensor, nn


def warmup_cosine(step: int, total: int, warmup: int) -> float:
    """LR multiplier: linear warmup to 1, then cosine decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


class TaskModule(pl.LightningModule):
    """One task: ``encoder`` (raw batch -> VectorSet), ``backbone`` (VectorSet -> VectorSet),
    ``head`` (VectorSet -> outputs, loss, metrics).

    Args:
        encoder, backbone, head: modules built from the config (``class_path``/``init_args``).
        lr: peak AdamW learning rate.
        weight_decay: AdamW weight decay.
        warmup: warmup length, as a fraction of all optimizer steps (< 1) or a step count.

    A config's ``optimizer:``/``lr_scheduler:`` sections replace this default AdamW +
    warmup + cosine schedule (LightningCLI's mechanism).
    """

    def __init__(self, encoder: nn.Module, backbone: nn.Module, head: nn.Module, lr: float = 1e-3,
                 weight_decay: float = 0.01, warmup: float = 0.05) -> None:
        super().__init__()
        if _given_hyperparameters.get() is not None:
            # built by LightningCLI: it hands over the parsed config, so the checkpoint can
            # rebuild every injected module with load_from_checkpoint
            self.save_hyperparameters()
        else:
            self.save_hyperparameters(ignore=["encoder", "backbone", "head"])
        self.encoder, self.backbone, self.head = encoder, backbone, head
        self.train_metrics = head.metrics().clone(prefix="train_")
        self.val_metrics = head.metrics().clone(prefix="val_")
        self.test_metrics = head.metrics().clone(prefix="test_")

    def forward(self, batch: dict) -> Tensor:
        vs = self.backbone(self.encoder(batch))
        return self.head(vs, batch.get("features"))

    # -- checks before training -------------------------------------------------------
    def on_fit_start(self) -> None:
        dm = getattr(self.trainer, "datamodule", None)
        if dm is None:
            return
        want = getattr(self.head, "num_classes", None)
        have = getattr(dm, "num_classes", None)
        if want is not None and have is not None and want != have:
            raise ValueError(
                f"the head predicts {want} classes but the data has {have} "
                f"({type(dm).__name__}.class_names = {dm.class_names}); set the head's "
                "num_classes/num_outputs to match"
            )
        if getattr(self.head, "task", None) == "regression" and self.trainer.ckpt_path is None:
            y = dm.train_targets()
            if y is None:
                raise ValueError(f"{type(dm).__name__} gives no train_targets() for the regression scaler")
            self.head.fit_scaler(torch.as_tensor(y, dtype=torch.float32))

    # -- steps --------------------------------------------------------------------------
    def _step(self, batch: dict, stage: str) -> Tensor:
        out = self(batch)
        loss = self.head.loss(out, batch)
        bs = len(batch["ids"])
        self.log(f"{stage}_loss", loss, on_step=stage == "train", on_epoch=True, prog_bar=stage != "test",
                 batch_size=bs, sync_dist=stage != "train")
        metrics = getattr(self, f"{stage}_metrics")
        metrics.update(*self.head.metric_inputs(out.detach(), batch))
        self.log_dict(metrics, on_step=False, on_epoch=True, prog_bar=stage == "val", batch_size=bs)
        return loss

    def training_step(self, batch: dict, batch_idx: int) -> Tensor:
        return self._step(batch, "train")

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        self._step(batch, "val")

    def test_step(self, batch: dict, batch_idx: int) -> None:
        self._step(batch, "test")

    def predict_step(self, batch: dict, batch_idx: int) -> dict:
        out = self(batch)
        return {"ids": batch["ids"].tolist(), **self.head.predict(out, batch)}

    # -- optimisation and checkpoints -------------------------------------------------
    def configure_optimizers(self):
        params = [p for p in self.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        total = max(1, int(self.trainer.estimated_stepping_batches))
        w = self.hparams.warmup
        warmup = max(1, int(w * total) if w < 1 else int(w))
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: warmup_cosine(s, total, warmup))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    def configure_callbacks(self):
        monitor, mode = self.head.monitor
        return [ModelCheckpoint(monitor=monitor, mode=mode, save_last=True, auto_insert_metric_name=False,
                                filename="best-epoch{epoch:03d}-" + monitor + "{" + monitor + ":.4f}")]
