"""SequenceHead (N -> 1): pool a set into one vector, then classify or regress.

Pooling ``attention`` is parametric attention pooling: a learned query attends over the
set (Bahdanau et al. 2015; Lee et al. 2019, "Set Transformer", pooling by multi-head
attention with one seed vector). It is Compact Convolutional Transformers' sequence pooling
(SeqPool, Hassani et al. 2021: w = softmax(x W_g) over the real vectors, pooled = sum_i w_i x_i):
key(x) . q / sqrt(D) = x (W_k^T q / sqrt(D)) plus a constant per set, which softmax drops.

Regression with ``regression_loss: gaussian_nll`` is a mean-variance head (Nix & Weigend 1994;
Lakshminarayanan et al. 2017, "Simple and Scalable Predictive Uncertainty Estimation using Deep
Ensembles"): per target a mean and a variance (softplus, so positive), trained with the Gaussian
negative log-likelihood (``torch.nn.GaussianNLLLoss``) on standardized targets.

``additive=True`` adds a sum of per-vector contributions to the pooled prediction,
y = MLP(pool(x)) + sum_i MLP_a(x_i): the atomwise readout of SchNet (Schuett et al. 2018) and
PaiNN, whose energies are sums over atoms. For extensive targets (a free energy grows with the
molecule) the sum carries the size that mean or attention pooling normalizes away.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet
from vecset.heads.contract import Head, check_class_count

if TYPE_CHECKING:
    from torchmetrics import MetricCollection

Pooling = Literal["mean", "cls", "attention"]
Task = Literal["classification", "regression"]
RegressionLoss = Literal["mse", "gaussian_nll"]
ClassWeights = Literal["none", "balanced"]
MIN_VARIANCE = 1e-6  # in standardized units: keeps the NLL finite when the predicted spread collapses


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
        class_weights: classification only: ``balanced`` weights each class's cross-entropy
            by n / (classes x its count in the training labels) (scikit-learn's "balanced";
            for two classes the ratio of the weights is BCE's ``pos_weight``), taken at fit
            and saved with the model; ``none``: unweighted.
        regression_loss: ``mse`` (one value per target) or ``gaussian_nll`` (a mean and a
            variance per target; predictions add ``std`` in the target's units).
        additive: add ``sum_i MLP_a(x_i)`` over the real vectors to the logits or the means
            (not the variances): an atomwise readout for extensive targets. Its last layer
            starts at zero, so training starts from the pooled model.

    Shapes:
        VectorSet (B, N, D) -> (B, num_outputs), or (B, 2 num_outputs) with ``gaussian_nll``
        (means, then raw variances); targets ``batch["y"]`` (B,) long or (B, num_outputs) float.
    """

    def __init__(self, d_model: int, num_outputs: int, task: Task = "classification",
                 pooling: Pooling = "mean", extra_features: int = 0, dropout: float = 0.0,
                 label_smoothing: float = 0.0, class_weights: ClassWeights = "none",
                 regression_loss: RegressionLoss = "mse", additive: bool = False) -> None:
        super().__init__()
        if task not in ("classification", "regression"):
            raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
        if pooling not in ("mean", "cls", "attention"):
            raise ValueError(f"pooling must be 'mean', 'cls' or 'attention', got {pooling!r}")
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
        if class_weights not in ("none", "balanced"):
            raise ValueError(f"class_weights must be 'none' or 'balanced', got {class_weights!r}")
        if regression_loss not in ("mse", "gaussian_nll"):
            raise ValueError(f"regression_loss must be 'mse' or 'gaussian_nll', got {regression_loss!r}")
        if task != "classification" and class_weights != "none":
            raise ValueError("class_weights is for task='classification'")
        if task != "regression" and regression_loss != "mse":
            raise ValueError("regression_loss is for task='regression'")
        self.task, self.pooling, self.num_outputs = task, pooling, num_outputs
        self.in_width = d_model
        self.class_weights, self.regression_loss = class_weights, regression_loss
        self.label_smoothing = label_smoothing
        self.extra_features = extra_features
        self.monitor = ("val_acc", "max") if task == "classification" else ("val_rmse", "min")
        if pooling == "attention":
            self.query = nn.Parameter(torch.randn(d_model) * 0.02)
            self.key = nn.Linear(d_model, d_model)
        self.last_pool_weights: Tensor | None = None
        width = d_model + extra_features
        self.mlp = nn.Sequential(nn.LayerNorm(width), nn.Dropout(dropout), nn.Linear(width, d_model),
                                 nn.GELU(), nn.Dropout(dropout), nn.Linear(d_model, num_outputs * self.values))
        self.additive = additive
        if additive:  # only then: checkpoints of other heads keep their keys
            self.contribution = nn.Sequential(nn.LayerNorm(d_model), nn.Linear(d_model, d_model), nn.GELU(),
                                              nn.Linear(d_model, num_outputs))
            nn.init.zeros_(self.contribution[-1].weight)
            nn.init.zeros_(self.contribution[-1].bias)
        self.register_buffer("target_mean", torch.zeros(num_outputs))
        self.register_buffer("target_std", torch.ones(num_outputs))
        if class_weights == "balanced":  # only then: checkpoints of unweighted heads keep their keys
            self.register_buffer("class_weight", torch.ones(num_outputs))

    @property
    def values(self) -> int:
        """Outputs per target: 2 (mean, variance) for the mean-variance head, else 1."""
        return 2 if self.regression_loss == "gaussian_nll" else 1

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
        out = self.mlp(h)
        if self.additive:
            out = out + F.pad(self.contributions(vs).sum(1), (0, out.shape[-1] - self.num_outputs))
        return out

    def contributions(self, vs: VectorSet) -> Tensor:
        """``additive`` only: each real vector's contribution (B, N, num_outputs), 0 on padding
        and on a class token."""
        x, mask = (vs.x[:, 1:], vs.mask[:, 1:]) if vs.cls else (vs.x, vs.mask)
        return self.contribution(x).masked_fill(~mask[..., None], 0.0)

    # -- the hand-over: class count, feature width, regression scaler ----------------------
    def receive(self, spec: DataSpec) -> str | None:
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
        if self.class_weights == "balanced" and spec.fit:
            self.fit_class_weights(torch.as_tensor(spec.targets("SequenceHead(class_weights='balanced')")), spec)
            return f"class weights {[round(w, 4) for w in self.class_weight.tolist()]} from the training labels"
        return None

    def fit_class_weights(self, labels: Tensor, spec: DataSpec | None = None) -> None:
        """n / (classes x count) per class from the training labels (B,) long; a class absent
        from them is an error (its weight would be infinite), naming the class as the data
        declares it (``spec.class_names``) and the data's file (``spec.origin``)."""
        counts = torch.bincount(labels.long().flatten(), minlength=self.num_outputs).double()
        if (counts == 0).any():
            names = spec.class_names if spec is not None and spec.class_names else None
            absent = [i for i, c in enumerate(counts.tolist()) if c == 0]
            what = ", ".join(f"{names[i]!r} (index {i})" if names else str(i) for i in absent)
            msg = f"{spec.where if spec else ''}class_weights='balanced': class{'es' if len(absent) > 1 else ''} " \
                  f"{what} {'have' if len(absent) > 1 else 'has'} no training labels"
            if spec is not None:
                present = [names[i] if names else str(i) for i, c in enumerate(counts.tolist()) if c]
                held = f"all {present[0]!r}" if len(present) == 1 else "of " + ", ".join(map(repr, present))
                msg += (f" in {spec.origin or spec.source} ({spec.source}'s training split: {len(labels)} labels, "
                        f"{held})")
            raise ValueError(msg + ": its weight would be infinite; use data with every class in its training "
                             "split, or class_weights none")
        self.class_weight.copy_((counts.sum() / (self.num_outputs * counts)).float())

    def fit_scaler(self, y: Tensor) -> None:
        """Standardize regression targets with the training set's mean and std."""
        y = y.reshape(len(y), -1).double()
        self.target_mean.copy_(y.nanmean(0).float())
        std = torch.sqrt(((y - y.nanmean(0)) ** 2).nanmean(0)).float()
        self.target_std.copy_(torch.where(std > 0, std, torch.ones_like(std)))

    def to_units(self, out: Tensor) -> Tensor:
        return out * self.target_std + self.target_mean

    def split_outputs(self, out: Tensor) -> tuple[Tensor, Tensor | None]:
        """Standardized mean (B, T) and variance (B, T) (None for ``mse``) of the raw output."""
        if self.values == 1:
            return out, None
        T = self.num_outputs
        return out[:, :T], F.softplus(out[:, T:]) + MIN_VARIANCE

    def mean_std(self, out: Tensor) -> tuple[Tensor, Tensor | None]:
        """Regression only: mean and std (B, T) in the target's units (std None for ``mse``).
        The scaler is undone for both: mean * s + m and sqrt(var) * s."""
        mean, var = self.split_outputs(out)
        return self.to_units(mean), None if var is None else var.sqrt() * self.target_std

    def check_batch(self, batch: dict) -> None:
        y = batch.get("y")
        if self.task == "classification" and y is not None and y.numel() and (y.min() < 0 or y.max() >= self.num_outputs):
            raise ValueError(
                f"label out of range: targets span [{int(y.min())}, {int(y.max())}] but "
                f"SequenceHead has num_outputs={self.num_outputs}"
            )

    def loss(self, out: Tensor, batch: dict) -> Tensor:
        y = batch["y"]
        if self.task == "classification":  # label ranges: check_batch, on the host
            weight = self.class_weight if self.class_weights == "balanced" else None
            return F.cross_entropy(out, y, weight=weight, label_smoothing=self.label_smoothing)
        mean, var = self.split_outputs(out)
        z = (y.reshape(mean.shape) - self.target_mean) / self.target_std
        if var is None:
            return F.mse_loss(mean, z)
        return F.gaussian_nll_loss(mean, z, var, full=True, eps=MIN_VARIANCE)

    def metrics(self) -> MetricCollection:
        # imported here: predicting needs no metrics (torchmetrics takes seconds to import)
        from torchmetrics import MeanAbsoluteError, MeanSquaredError, MetricCollection
        from torchmetrics.classification import MulticlassAccuracy

        if self.task == "classification":
            # validate_args off: its checks read the targets on the host at every update (a
            # host-device sync); check_batch checks the label range before the transfer
            return MetricCollection({"acc": MulticlassAccuracy(self.num_outputs, average="micro", validate_args=False)})
        return MetricCollection({"rmse": MeanSquaredError(squared=False), "mae": MeanAbsoluteError()})

    def metric_inputs(self, out: Tensor, batch: dict) -> tuple[Tensor, Tensor]:
        if self.task == "classification":  # (B, K) class probabilities (MixUp/CutMix): their argmax
            return out.argmax(-1), batch["y"].argmax(-1) if batch["y"].is_floating_point() else batch["y"]
        mean, _ = self.mean_std(out)
        return mean.flatten(), batch["y"].reshape(mean.shape).flatten()

    def served_outputs(self, out: Tensor) -> dict[str, Tensor]:
        """Classification: the logits (B, C). Regression: the values in the target's units
        (B, T), and their ``std`` (B, T) with ``gaussian_nll``, as ``predict`` gives them."""
        if self.task == "classification":
            return {"logits": out}
        mean, std = self.mean_std(out)
        return {"value": mean} | ({} if std is None else {"std": std})

    def predict(self, out: Tensor, batch: dict) -> dict:
        if self.task == "classification":
            prob, label = out.softmax(-1).max(-1)
            return {"label": label.tolist(), "prob": prob.tolist()}
        mean, std = self.mean_std(out)
        return {"value": mean.tolist()} | ({} if std is None else {"std": std.tolist()})
