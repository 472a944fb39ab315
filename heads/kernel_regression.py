"""Nadaraya-Watson kernel regression as attention pooling (Nadaraya 1964; Watson 1964;
the presentation of d2l.ai sec. 11.2).

f(q) = sum_i alpha(q, k_i) v_i with alpha = softmax_i(-((q - k_i) w)^2 / 2): a Gaussian
kernel over the distance between the query and each key. With w = 1 it is the
nonparametric estimator (nothing learned); the parametric version learns the width w.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MeanSquaredError, MetricCollection

from vecset.backbone.masked_softmax import masked_softmax
from vecset.contracts.vectorset import VectorSet
from vecset.heads.contract import Head


def nadaraya_watson(queries: Tensor, keys: Tensor, values: Tensor, valid_lens: Tensor | None = None,
                    width: Tensor | float = 1.0) -> tuple[Tensor, Tensor]:
    """Gaussian-kernel attention pooling.

    Shapes:
        queries (B, Q), keys (B, K), values (B, K), valid_lens None or (B,) ->
        predictions (B, Q), weights (B, Q, K) (exactly 0 past a set's valid length)
    """
    scores = -((queries[:, :, None] - keys[:, None, :]) * width) ** 2 / 2  # (B, Q, K)
    weights = masked_softmax(scores, valid_lens)
    return (weights @ values[:, :, None])[..., 0], weights


class NadarayaWatsonHead(Head):
    """Attention pooling of ``batch["values"]`` over the keys in the VectorSet, queried by
    ``batch["query"]``; the kernel width is learned (parametric Nadaraya-Watson).

    Args:
        init_width: starting width w (1.0 = the nonparametric estimator).

    Shapes:
        VectorSet x (B, K, 1) keys, mask (B, K); batch["query"] (B,), batch["values"] (B, K),
        batch["y"] (B,) -> predictions (B,)
    """

    task = "kernel_regression"
    monitor = ("val_rmse", "min")
    needs_batch = True  # the queries and values come with the batch

    def __init__(self, init_width: float = 1.0) -> None:
        super().__init__()
        self.width = nn.Parameter(torch.tensor(float(init_width)))
        self.in_width = 1  # scalar keys
        self.last_weights: Tensor | None = None

    def forward(self, vs: VectorSet, features: Tensor | None = None, batch: dict | None = None) -> Tensor:
        if vs.x.shape[-1] != 1:
            raise ValueError(f"NadarayaWatsonHead expects scalar keys (B, K, 1), got {tuple(vs.x.shape)}")
        pred, w = nadaraya_watson(batch["query"][:, None].to(vs.x.dtype), vs.x[..., 0], batch["values"],
                                  vs.mask.sum(1), self.width)
        self.last_weights = w[:, 0].detach()  # (B, K)
        return pred[:, 0]

    def loss(self, out: Tensor, batch: dict) -> Tensor:
        return F.mse_loss(out, batch["y"].to(out.dtype))

    def metrics(self) -> MetricCollection:
        return MetricCollection({"rmse": MeanSquaredError(squared=False)})

    def metric_inputs(self, out: Tensor, batch: dict) -> tuple[Tensor, Tensor]:
        return out, batch["y"]

    def predict(self, out: Tensor, batch: dict) -> dict:
        return {"value": out[:, None].tolist()}
