"""LabelingHead (N -> N): one label per vector (speech frames, tokens, graph nodes)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import Metric, MetricCollection

from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet
from vecset.heads.contract import Head, check_class_count
from vecset.heads.segment_decoder import SegmentDecoder


class LabelAccuracy(Metric):
    """The share of correct labels among the targets that are not ``ignore_index`` (padding):
    torchmetrics' ``MulticlassAccuracy(average="micro", ignore_index=...)``, without its
    boolean-mask indexing and argument checks, which read the targets on the host at every
    update (a host-device sync on a GPU; label ranges are checked before the transfer,
    ``LabelingHead.check_batch``).

    Shapes: update(preds (M,) long, target (M,) long) -> compute () float
    """

    full_state_update = False

    def __init__(self, ignore_index: int = -100) -> None:
        super().__init__()
        self.ignore_index = ignore_index
        self.add_state("correct", default=torch.tensor(0), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, preds: Tensor, target: Tensor) -> None:
        real = target != self.ignore_index
        self.correct += ((preds == target) & real).sum()
        self.total += real.sum()

    def compute(self) -> Tensor:
        # 0 when no target counts, as torchmetrics' safe division gives
        return self.correct.float() / self.total.clamp(min=1).float()


class LabelingHead(Head):
    """Per-vector logits.

    Args:
        d_model: input width D.
        num_classes: number of labels C.
        ignore_index: target value that contributes neither to the loss nor to metrics
            (padding uses it too).
        dropout: dropout before the classifier.
        decoder: turns a set's logits into labels in runs (``SegmentDecoder``: speech frames into
            phone segments without one-frame flicker; ``segment_decoder``); ``predict`` then gives
            each set's log-posteriors (``log_prob``) for ``vecset predict`` to decode. None: the
            argmax only.

    Shapes:
        VectorSet (B, N, D) -> logits (B, N, C); targets ``batch["y"]`` (B, N) long.
    """

    task = "labeling"
    monitor = ("val_acc", "max")
    # how outputs become segments, not the weights: a checkpoint predicts with the config's decoder
    # (pipelines/training/checkpoint_fit.py)
    decode_settings = ("decoder",)
    receptive_field = 0  # each vector's logits read that vector alone (chunked predict relies on it)

    def __init__(self, d_model: int, num_classes: int, ignore_index: int = -100, dropout: float = 0.0,
                 decoder: SegmentDecoder | None = None) -> None:
        super().__init__()
        self.num_classes, self.ignore_index = num_classes, ignore_index
        self.decoder = decoder
        self.drop = nn.Dropout(dropout)
        self.in_width = d_model
        self.proj = nn.Linear(d_model, num_classes)

    def forward(self, vs: VectorSet, features: Tensor | None = None, batch: dict | None = None) -> Tensor:
        x = vs.x[:, 1:] if vs.cls else vs.x  # a CLS vector has no label
        return self.proj(self.drop(x))  # (B, N, C)

    def receive(self, spec: DataSpec) -> None:
        check_class_count(self.num_classes, spec)

    def check_batch(self, batch: dict) -> None:
        if "y" in batch:
            self.check_targets(batch["y"])

    def check_targets(self, y: Tensor) -> None:
        real = y[y != self.ignore_index]
        if real.numel() and (real.min() < 0 or real.max() >= self.num_classes):
            raise ValueError(
                f"label out of range: targets span [{int(real.min())}, {int(real.max())}] but "
                f"LabelingHead has num_classes={self.num_classes}"
            )

    def loss(self, out: Tensor, batch: dict) -> Tensor:
        # label ranges are checked on the host, before the batch reaches the device (check_batch)
        return F.cross_entropy(out.flatten(0, 1), batch["y"].flatten(), ignore_index=self.ignore_index)

    def metrics(self) -> MetricCollection:
        return MetricCollection({"acc": LabelAccuracy(self.ignore_index)})

    def metric_inputs(self, out: Tensor, batch: dict) -> tuple[Tensor, Tensor]:
        return out.argmax(-1).flatten(), batch["y"].flatten()

    def served_outputs(self, out: Tensor) -> dict[str, Tensor]:
        """The per-vector logits (B, N, C); padded positions are there too (the mask says which
        are real), and a ``decoder`` runs on their log-softmax afterwards."""
        return {"logits": out}

    def segment_decoder(self) -> SegmentDecoder | None:
        return self.decoder

    def predict(self, out: Tensor, batch: dict) -> dict:
        """Per set: predicted labels and their probabilities, for the real vectors only; with a
        decoder also their log-posteriors (``log_prob``, (n, C) tensors), which the predict side
        feeds to the decoder in order (a long input's chunks too: one decode of the whole)."""
        prob, label = out.softmax(-1).max(-1)  # (B, N)
        mask = batch["mask"]
        pred = {
            "label": [label[i][mask[i]].tolist() for i in range(len(label))],
            "prob": [prob[i][mask[i]].tolist() for i in range(len(prob))],
        }
        if self.decoder is not None:
            pred["log_prob"] = [out[i][mask[i]].float().log_softmax(-1) for i in range(len(out))]
        return pred
