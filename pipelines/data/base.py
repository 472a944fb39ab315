"""Base DataModule: what every vecset dataset tells the model (once, at setup), and what its
inputs were (for the prediction writers of ``pipelines/predict``)."""

from __future__ import annotations

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
    - ``reports()``: the reports written after test (``pipelines/reports``, run by
      ``ReportWriter``; a data module names them, it never runs the model itself).

    A data module never calls the model: what the model needs flows through ``data_spec``.
    """

    class_names: list[str] | None = None
    target_names: list[str] | None = None

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

    def reports(self) -> list:
        """The reports of this task, run after test: by default the per-class report
        (accuracy per class, confusion matrix) of a task with ``class_names``, the parity
        report of one with ``target_names`` (regression), none otherwise. Subclasses add or
        replace them (speech: per-phone; images: attention maps; ...)."""
        # imported here: the reports bring matplotlib, which importing the data need not
        from vecset.pipelines.reports.classification import ClassificationReport
        from vecset.pipelines.reports.regression import ParityReport

        if self.class_names:
            return [ClassificationReport()]
        if getattr(self, "target_names", None):
            return [ParityReport()]
        return []
