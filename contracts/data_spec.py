"""DataSpec: what a model needs from its data, handed over once, from the data to the model.

The data module describes its data in one DataSpec (``VecsetDataModule.data_spec(stage)``);
at setup the Lightning module passes it to its encoder(s) and head(s) (``receive(spec)``),
which check it (a class count that does not match is a clear error) and take what they learn
from the training split: a vocabulary, a regression scaler, normalization statistics. After
that the data module never touches the model.

It lives in backbone/ beside VectorSet because both encoders and heads read it, and heads
never import encoders nor the reverse: backbone/ is the one package below both. It is plain
data (lists, tensors), no Lightning, so encoders and heads stay testable without a Trainer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torch import Tensor


@dataclass(frozen=True)
class DataSpec:
    """One task's data, as its model needs to know it.

    Args:
        source: who describes the data (the data module's class name), for messages.
        origin: the file or folder the data comes from, for messages (None: not said).
        task: the task's name in a multi-task run (None for a single task), for messages.
        fit: True at the start of training: the model takes what it learns from the training
            split (vocabulary, scaler, statistics). False (validate, test, predict): the
            model already has them (from training or a checkpoint) and only checks.
        class_names: label names of a classification or labeling task; None otherwise.
        feature_width: width F of the set-level features ``batch["features"]`` (e.g.
            molecule descriptors); 0 when the batches carry none.
        train_targets: targets of the training split (fit only): regression values for the
            scaler, or class indices for class weights.
        train_texts: batch field -> the training split's texts of that field (fit only), to
            build vocabularies. A text is a string or an already tokenized list of str.
        train_inputs: the training split's per-vector inputs (fit only), for encoders that fit
            a global normalization (e.g. speech frames).
        structure: how the data made its structure tensors, in its encoder's own terms (a graph
            encoder's ``GraphStructure``: distance clipping, eigenvectors, widths), for the
            encoder to check its tables against; None for data without structure tensors.

    Shapes:
        train_targets: (n, T) or (n,) float, or (n,) long class indices; train_inputs: one (N_i, F) float per sample.
    """

    source: str = "the data"
    origin: str | None = None
    task: str | None = None
    fit: bool = False
    class_names: list[str] | None = None
    feature_width: int = 0
    train_targets: Tensor | None = None
    train_texts: dict[str, list] = field(default_factory=dict)
    train_inputs: list[Tensor] | None = None
    structure: Any = None

    @property
    def num_classes(self) -> int | None:
        return None if self.class_names is None else len(self.class_names)

    @property
    def where(self) -> str:
        """Message prefix naming the task in a multi-task run ("task 'speech': ")."""
        return f"task {self.task!r}: " if self.task else ""

    def texts(self, name: str, who: str) -> list:
        """The training texts of batch field ``name``, which ``who`` builds a vocabulary from."""
        if name not in self.train_texts:
            gives = f"it gives {sorted(self.train_texts)}" if self.train_texts else "it gives none"
            raise ValueError(f"{self.where}{who} builds a vocabulary from the training texts of batch "
                             f"field {name!r} but {self.source} gives none for that field ({gives})")
        return self.train_texts[name]

    def targets(self, who: str) -> Tensor:
        """The training split's regression targets, which ``who`` fits a scaler on."""
        if self.train_targets is None:
            raise ValueError(f"{self.where}{self.source} gives no training targets for the regression "
                             f"scaler of {who}")
        return self.train_targets

    def inputs(self, who: str) -> list[Tensor]:
        """The training split's per-vector inputs, which ``who`` fits statistics on."""
        if not self.train_inputs:
            raise ValueError(f"{self.where}{who} fits its normalization on the training frames but "
                             f"{self.source} gives none")
        return self.train_inputs
