"""Base DataModule, the data module contract: what every vecset dataset tells the model (once, at
setup), what its inputs were, and what the generic layers need from its job (its prediction
output, its default reports, the values it links into the model's config)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytorch_lightning as pl

from vecset.contracts.data_spec import DataSpec


@dataclass(frozen=True)
class ModelLink:
    """A value of the data's config that a model part's argument must equal, given once (the CLI
    links it: ``pipelines/config_links.py``).

    Args:
        what: what the value is, for the message ("class count").
        sources: the data's ``init_args`` it is computed from; none: a value of the data class
            itself (Digits' 10 classes), which the config's data ``class_path`` chooses.
        part: the model part that takes it: ``"encoder"`` or ``"head"``.
        name: the part's ``init_args`` key it is written to.
        compute: the sources' values -> (the value, the source argument it comes from, that
            argument's value as the message shows it); ``"class_path"`` as the argument for a
            value of the class (``fixed``). The value None: the data cannot tell before setup
            (an image folder that is not there yet); the config's value stands, and the part's
            ``receive`` checks it at setup.
    """

    what: str
    sources: tuple[str, ...]
    part: Literal["encoder", "head"]
    name: str
    compute: Callable[..., tuple[Any, str, str]]


def fixed(what: str, part: Literal["encoder", "head"], name: str, value: Any, shown: str) -> ModelLink:
    """A link of a value the data class fixes (``shown``: how the message says it, "10 classes")."""
    return ModelLink(what, (), part, name, lambda: (value, "class_path", shown))


class VecsetDataModule(pl.LightningDataModule):
    """Adds to LightningDataModule:

    - ``class_names``: label names (classification/labeling) or None; ``target_names``: the
      regression targets' names or None;
    - ``data_spec(stage)``: what the model needs from the data (class names, training
      targets, texts or frames, feature width), the one hand-over from data to model;
    - ``describe(sample_id)``: what the sample's input was (a file, a CSV line), for messages
      and the prediction rows (``pipelines/predict`` writes the predictions, not the data);
    - ``test_items()``: the test split's items in the test loader's order, as its reader made
      them (what reports read besides the test pass; ``collate`` batches a few of them:
      ``test_batch(n)``);
    - ``class_balance()``: per split, the count of each class, or None;
    - ``item_keys(split)`` and ``label_key()``: what identifies each item and what its label is,
      for the leakage check of multi-task runs (``overlap.py``), or None where not declared.

    What the generic layers (``pipelines/predict``, ``pipelines/reports``, the CLI's config links)
    need from a job, the job's data module declares; they import no job:

    - ``prediction_output(out_dir, model)``: the writer of ``vecset predict``'s files;
    - ``default_reports()``: the reports ``ReportWriter`` writes when its config lists none;
    - ``model_links()``: the values of its arguments the model's parts must agree with.

    A data module never calls the model: what the model needs flows through ``data_spec``.
    """

    class_names: list[str] | None = None
    target_names: list[str] | None = None
    # the class path of the job's Predictor (``pipelines/<job>/predictor.py``), which ``vecset pack``
    # and ``vecset.pretrained(run_dir)`` build from a run of this data; None: the job has none
    predictor: str | None = None
    # the (C, H, W) of every image a batch holds, for data of images (None: not images); the
    # sets one step holds (a subclass's constructor argument)
    image_shape: tuple[int, int, int] | None = None
    batch_size: int = 1
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

    def test_batch(self, n: int) -> Any:
        """The first ``n`` test items (all of them when there are fewer) as one batch, ``collate``'s;
        None for none. A data module whose reader reads and batches in one call overrides it."""
        items = self.test_items()
        first = [items[i] for i in range(min(n, len(items)))]
        return self.collate(first) if first else None

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

    # -- what the generic layers ask the job (a job's data module overrides them) --
    def prediction_output(self, out_dir: Path, model: Any) -> Any:
        """The writer of this data's ``vecset predict`` files (a ``PredictionOutput``, asked after
        ``setup("predict")``), given the run directory and what the predicted model declares for
        the predict side (a ``PredictModel``: values, not the model). None: the generic rows,
        one CSV row per sample (``pipelines/predict/rows.py``)."""
        return None

    def predict_table(self) -> tuple[Path, str] | None:
        """The file of ``vecset predict --config``'s inputs as a table of rows (a CSV) and its
        input column, which the job's ``predictor`` then predicts: the same rows as ``vecset
        predict --model`` (input columns kept, errors in place). None: Lightning's predict loop
        and ``prediction_output``."""
        return None

    def default_reports(self) -> list | None:
        """The reports (``Report`` objects) of this data's job, which ``ReportWriter`` writes when
        its config lists none. None: the generic ones (the per-class report with ``class_names``,
        the parity report with ``target_names``; ``pipelines/reports/defaults.py``)."""
        return None

    @classmethod
    def model_links(cls) -> list[ModelLink]:
        """The values of this data's arguments that the model's parts take (the CLI links them at
        parse, before anything is built, so a config gives each once). Here none."""
        return []

    def longest_set(self) -> tuple[int, str] | None:
        """After setup: the most vectors one of this data's sets makes (one per item the encoder
        reads: a time step, a frame) and which set it is ("train_7.csv (200000 time steps)"), for
        the check that attention can hold it (``pipelines/training/set_size.py``); None: not
        declared (images declare ``image_shape`` instead)."""
        return None

    @classmethod
    def input_paths(cls, init_args: dict[str, Any], subcommand: str | None) -> dict[str, Path]:
        """The files and folders this data's arguments (``init_args``, as the config gives them)
        name, which ``subcommand`` (fit, test, predict...; None: the config alone) reads: argument ->
        the path as the data module opens it. The CLI checks that they exist when the config is
        read, before any model is built. Here none."""
        return {}

    def label_key(self) -> str:
        """What this data's targets are: two data modules with one key label their items alike
        (the same file and columns). Here: this object alone."""
        return f"{type(self).__name__} at {id(self):#x}"
