"""SequenceHead (N -> 1): pool a set into one vector, then classify or regress.

Pooling ``attention`` is parametric attention pooling: a learned query attends over the
set (Bahdanau et al. 2015; Lee et al. 2019, "Set Transformer", pooling by multi-head
attention with one seed vector).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MeanAbsoluteError, MeanSquaredError, MetricCollection
from torchmetrics.classification import MulticlassAccuracy

from vecset.backbone.data_spec import DataSpec
from vecset.backbone.vectorset import VectorSet
from vecset.heads.contract import Head, check_class_count

Pooling = Literal["mean", "cls", "attention"]
Task = Literal["classification", "regression"]


class SequenceHead(Head):
    """Pool, then a small MLP to ``num_outputs`` logits or values.

    Args:
        d_model: input width D.
        num_outputs: classes (classification) or targets (regression).
        task: ``classification`` (cross-entropy) or ``regression`` (MSE on standardized
            targets; the scaler is a buffer, so it is saved with the model and predictions
            come back in the original units).
        pooling: ``mean`` over real vectors, ``cls`` (needs ``Backbone(cls_token=True)``,
            which truncated attention or a convolution in the backbone rule out: pool with
            ``mean`` or ``attention`` there), or ``attention`` (a learned query; its weights
            are kept in ``last_pool_weights``).
        extra_features: width of optional set-level features (``batch["features"]``)
            joined to the pooled vector (e.g. molecule descriptors).
        dropout: dropout before the output layer.
        label_smoothing: classification only: the cross-entropy's target puts this share of
            its mass uniformly over all classes (Szegedy et al. 2016, "Rethinking the Inception
            Architecture"); 0 is the plain cross-entropy.

    Shapes:
        VectorSet (B, N, D) -> (B, num_outputs); targets ``batch["y"]`` (B,) long or
        (B, num_outputs) float.
    """

    def __init__(self, d_model: int, num_outputs: int, task: Task = "classification",
                 pooling: Pooling = "mean", extra_features: int = 0, dropout: float = 0.0,
                 label_smoothing: float = 0.0) -> None:
        super().__init__()
        if task not in ("classification", "regression"):
            raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
        if pooling not in ("mean", "cls", "attention"):
            raise ValueError(f"pooling must be 'mean', 'cls' or 'attention', got {pooling!r}")
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
        self.task, self.pooling, self.num_outputs = task, pooling, num_outputs
        self.label_smoothing = label_smoothing
        self.extra_features = extra_features
        self.monitor = ("val_acc", "max") if task == "classification" else ("val_rmse", "min")
        if pooling == "attention":
            self.query = nn.Parameter(torch.randn(d_model) * 0.02)
            self.key = nn.Linear(d_model, d_model)
        self.last_pool_weights: Tensor | None = None
        width = d_model + extra_features
        self.mlp = nn.Sequential(nn.LayerNorm(width), nn.Dropout(dropout), nn.Linear(width, d_model),
                                 nn.GELU(), nn.Dropout(dropout), nn.Linear(d_model, num_outputs))
        self.register_buffer("target_mean", torch.zeros(num_outputs))
        self.register_buffer("target_std", torch.ones(num_outputs))

    @property
    def num_classes(self) -> int | None:
        return self.num_outputs if self.task == "classification" else None

    def pool(self, vs: VectorSet) -> Tensor:
        """(B, N, D) -> (B, D)."""
        if self.pooling == "cls":
            if not vs.cls:
                raise ValueError("SequenceHead(pooling='cls') needs Backbone(cls_token=True)")
            return vs.x[:, 0]
        x, mask = (vs.x[:, 1:], vs.mask[:, 1:]) if vs.cls else (vs.x, vs.mask)
        if self.pooling == "mean":
            m = mask[..., None].to(x.dtype)
            return (x * m).sum(1) / m.sum(1).clamp(min=1)
        scores = self.key(x) @ self.query / math.sqrt(x.shape[-1])  # (B, N)
        weights = scores.masked_fill(~mask, float("-inf")).softmax(-1)  # padded: exactly 0
        self.last_pool_weights = weights.detach()
        return (weights[..., None] * x).sum(1)

    def forward(self, vs: VectorSet, features: Tensor | None = None, batch: dict | None = None) -> Tensor:
        h = self.pool(vs)
        if self.extra_features:
            if features is None or features.shape[-1] != self.extra_features:
                got = None if features is None else tuple(features.shape)
                raise ValueError(f"SequenceHead expects batch['features'] of width {self.extra_features}, got {got}")
            h = torch.cat([h, features.to(h.dtype)], dim=-1)
        return self.mlp(h)

    # -- the hand-over: class count, feature width, regression scaler ----------------------
    def receive(self, spec: DataSpec) -> None:
        if self.num_classes is not None:
            check_class_count(self.num_classes, spec)
        if spec.feature_width != self.extra_features:
            # features on in the data but not in the head (or the reverse) is a config error,
            # not features silently ignored
            raise ValueError(
                f"{spec.where}{spec.source} gives {spec.feature_width} set-level features "
                f"(batch['features']) but the head has extra_features={self.extra_features}; set the "
                f"head's extra_features to {spec.feature_width}, or configure the data to give {self.extra_features}"
            )
        if self.task == "regression" and spec.fit:
            self.fit_scaler(torch.as_tensor(spec.targets("SequenceHead(task='regression')"), dtype=torch.float32))

    def fit_scaler(self, y: Tensor) -> None:
        """Standardize regression targets with the training set's mean and std."""
        y = y.reshape(len(y), -1).double()
        self.target_mean.copy_(y.nanmean(0).float())
        std = torch.sqrt(((y - y.nanmean(0)) ** 2).nanmean(0)).float()
        self.target_std.copy_(torch.where(std > 0, std, torch.ones_like(std)))

    def to_units(self, out: Tensor) -> Tensor:
        return out * self.target_std + self.target_mean

    def loss(self, out: Tensor, batch: dict) -> Tensor:
        y = batch["y"]
        if self.task == "classification":
            if y.numel() and (y.min() < 0 or y.max() >= self.num_outputs):
                raise ValueError(
                    f"label out of range: targets span [{int(y.min())}, {int(y.max())}] but "
                    f"SequenceHead has num_outputs={self.num_outputs}"
                )
            return F.cross_entropy(out, y, label_smoothing=self.label_smoothing)
        z = (y.reshape(out.shape) - self.target_mean) / self.target_std
        return F.mse_loss(out, z)

    def metrics(self) -> MetricCollection:
        if self.task == "classification":
            return MetricCollection({"acc": MulticlassAccuracy(self.num_outputs, average="micro")})
        return MetricCollection({"rmse": MeanSquaredError(squared=False), "mae": MeanAbsoluteError()})

    def metric_inputs(self, out: Tensor, batch: dict) -> tuple[Tensor, Tensor]:
        if self.task == "classification":
            return out.argmax(-1), batch["y"]
        return self.to_units(out).flatten(), batch["y"].reshape(out.shape).flatten()

    def predict(self, out: Tensor, batch: dict) -> dict:
        if self.task == "classification":
            prob, label = out.softmax(-1).max(-1)
            return {"label": label.tolist(), "prob": prob.tolist()}
        return {"value": self.to_units(out).tolist()}
