"""Base DataModule: what every vecset dataset tells the model (once, at setup), and what its
inputs were (for the prediction writers of ``pipelines/predict``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytorch_lightning as pl

from vecset.backbone.data_spec import DataSpec


class VecsetDataModule(pl.LightningDataModule):
    """Adds to LightningDataModule:

    - ``class_names``: label names (classification/labeling) or None; ``target_names``: the
      regression targets' names or None;
    - ``data_spec(stage)``: what the model needs from the data (class names, training
      targets, texts or frames, feature width), the one hand-over from data to model;
    - ``describe(sample_id)``: what the sample's input was (a file, a CSV line), for messages
      and the prediction rows (``pipelines/predict`` writes the predictions, not the data);
    - ``test_items()``: the test split's items in the test loader's order, as its reader made
      them (what reports read besides the test pass; ``collate`` batches a few of them);
    - ``class_balance()``: per split, the count of each class, or None;
    - ``item_keys(split)`` and ``label_key()``: what identifies each item and what its label is,
      for the leakage check of multi-task runs (``overlap.py``), or None where not declared.

    A data module never calls the model: what the model needs flows through ``data_spec``. It
    names no reports either: those are configured on ``ReportWriter``, with defaults per job
    in ``pipelines/reports/defaults.py``.
    """

    class_names: list[str] | None = None
    target_names: list[str] | None = None
    # set by MultiTaskDataModule: the files this data writes into the run go to <log_dir>/<task>/,
    # beside that task's reports
    task_name: str | None = None

    def run_dir(self) -> Path | None:
        """Where this data writes its own files (skipped rows, duplicates): the attached Trainer's
        ``log_dir`` (a task's folder in it for a multi-task run); None without a Trainer."""
        if self.trainer is None:
            return None
        root = Path(self.trainer.log_dir)  # a broadcast under DDP: every process asks
        return root / self.task_name if self.task_name else root

    @property
    def num_classes(self) -> int | None:
        return len(self.class_names) if self.class_names is not None else None

    # -- loaders: a subclass defines _loader(split, shuffle); predict reads predict_split() --
    def _loader(self, split: str, shuffle: bool = False):
        raise NotImplementedError(f"{type(self).__name__} defines no _loader(split, shuffle)")

    def predict_split(self) -> str:
        """The split ``vecset predict`` reads (the test split unless files were given)."""
        return "test"

    def train_dataloader(self):
        return self._loader("train", shuffle=True)

    def val_dataloader(self):
        return self._loader("val")

    def test_dataloader(self):
        return self._loader("test")

    def predict_dataloader(self):
        return self._loader(self.predict_split())

    def data_spec(self, stage: str) -> DataSpec:
        """What the model needs from this data (see ``DataSpec``), read after ``setup(stage)``:
        the Lightning module hands it to its encoder(s) and head(s) once, at its own setup.
        Here the class names; a subclass adds what its data has (training targets, texts,
        frames, the width of set-level features)."""
        return DataSpec(source=type(self).__name__, fit=stage == "fit", class_names=self.class_names)

    def describe(self, sample_id: int) -> str:
        """What the input of sample ``sample_id`` was: a file path, ``file:line`` and SMILES, a
        word... (here the id itself). Prediction rows and ``NonFiniteGuard``'s messages use
        it, for any split, so a data module that overrides it gives ids unique over its splits."""
        return str(sample_id)

    def test_items(self) -> Sequence[Any]:
        """The test split's items (after ``setup``), in ``test_dataloader``'s order: dicts of
        the fields ``collate`` batches, or a subclass's item type (speech: ``Utterance``)."""
        raise NotImplementedError(f"{type(self).__name__} defines no test_items()")

    def class_balance(self) -> dict[str, dict[str, int]] | None:
        """Per split, the number of items of each class; None where the data does not count them."""
        return None

    def item_keys(self, split: str) -> list[str] | None:
        """What identifies each item of ``split`` (after ``setup``) as an input, e.g. a molecule's
        canonical SMILES; two items with one key are the same input. None: not declared (the
        multi-task leakage check, ``overlap.py``, skips this data)."""
        return None

    def item_keys_of(self, path: str) -> list[str] | None:
        """The keys (as ``item_keys``) of the items of another file of this data's kind, e.g. the
        molecules a model was pretrained on; None: not declared."""
        return None

    def label_key(self) -> str:
        """What this data's targets are: two data modules with one key label their items alike
        (the same file and columns). Here: this object alone."""
        return f"{type(self).__name__} at {id(self):#x}"
