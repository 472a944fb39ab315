"""Head: the contract every head follows, so that TaskModule and MultiTaskModule run any head
through one step (``vecset.pipelines.training.step``) without asking what it is."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from torch import Tensor, nn

from vecset.backbone.tracing import NotExportable
from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet

if TYPE_CHECKING:  # torchmetrics: imported where a head builds its metrics (training), not to predict
    from torchmetrics import MetricCollection

    from vecset.heads.segment_decoder import SegmentDecoder


class Head(nn.Module, ABC):
    """Reads the backbone's VectorSet and owns the task's loss, metrics and predictions.

    A subclass sets:

    - ``monitor``: (a logged validation metric, ``"min"`` or ``"max"``), e.g.
      ``("val_acc", "max")``: what the best checkpoint is chosen by in a single-task run;
    - ``needs_batch``: True when ``forward`` reads the batch (teacher forcing reads the
      targets, kernel regression the queries); the step then passes it, else ``None``;
    - ``in_width``: the width D of the vectors it reads (its ``d_model``), checked against the
      backbone and the encoder when the task module is built; None: not declared.

    and defines ``forward``, ``loss``, ``metrics``, ``metric_inputs``, ``predict``; and
    ``receive`` when it checks or learns something from the data (the hand-over, once at setup);
    and ``segment_decoder`` when its outputs are decoded into runs of labels.

    Shapes:
        forward: VectorSet x (B, N, D), mask (B, N); features None or (B, F) -> out (a
        tensor or a dict of tensors, whatever ``loss``/``metric_inputs``/``predict`` read).
    """

    monitor: tuple[str, str]
    needs_batch: bool = False
    in_width: int | None = None

    @abstractmethod
    def forward(self, vs: VectorSet, features: Tensor | None = None, batch: dict | None = None) -> Any:
        """The head's output for the batch (``batch`` is None unless ``needs_batch``)."""

    @abstractmethod
    def loss(self, out: Any, batch: dict) -> Tensor:
        """Scalar training loss of ``out`` against the batch's targets."""

    @abstractmethod
    def metrics(self) -> MetricCollection:
        """A fresh collection; the Lightning module clones it per stage (``val_acc``...)."""

    @abstractmethod
    def metric_inputs(self, out: Any, batch: dict) -> tuple:
        """The arguments of ``metrics().update`` for this batch."""

    @abstractmethod
    def predict(self, out: Any, batch: dict) -> dict:
        """Per-sample predictions for ``vecset predict`` (lists, one entry per sample)."""

    def check_batch(self, batch: dict) -> None:
        """Checks of the batch's values (label ranges), run on the host before the batch moves
        to the device (the task modules' ``on_before_batch_transfer``), so that a training step
        never waits on a read from the device; ``loss`` does not repeat them. A bad batch is a
        ValueError. Default: nothing to check."""

    def segment_decoder(self) -> SegmentDecoder | None:
        """The decoder that turns one set's per-vector outputs into labels in runs (a
        ``SegmentDecoder``: speech frames into phone segments), or None. ``vecset predict`` feeds
        it each input's ``log_prob`` (from ``predict``) in order, also across the chunks of a
        long input. Default: none."""
        return None

    def served_outputs(self, out: Any) -> dict[str, Tensor]:
        """What an exported model (``vecset export``) returns for ``out``, by name: tensors
        only, computed in the graph (a decoder that turns them into labels runs afterwards, in
        Python). Default: this head cannot be exported."""
        raise NotExportable(f"{type(self).__name__} declares no served outputs (Head.served_outputs), so its "
                            "model cannot be exported; LabelingHead and SequenceHead can")

    def receive(self, spec: DataSpec) -> str | None:
        """The hand-over: check the data and take what the head learns from it (a scaler, a
        vocabulary) when ``spec.fit``; return what it took, for the run's log, or None.
        Default: nothing to check or take."""
        return None


def check_class_count(num_classes: int, spec: DataSpec) -> None:
    """A head with ``num_classes`` outputs against data with ``spec.class_names`` labels."""
    have = spec.num_classes
    if have is not None and num_classes != have:
        raise ValueError(
            f"{spec.where}the head predicts {num_classes} classes but the data has {have} "
            f"({spec.source}.class_names = {spec.class_names}); set the head's "
            "num_classes/num_outputs to match"
        )
