"""TimeSeriesDataModule: classify multichannel series, each a set of time-step vectors (N -> 1).

The data is a folder of CSV files, one series each (a header naming the channels, one row per
time step, any number of rows), and a ``labels.csv`` of ``file,label[,split]``
(``encoders/timeseries/reading.py`` reads both and names the file, line and column of any
error). The shipped default is UCI Japanese Vowels (Kudo, Toyama & Shimbo 1999; 9 speakers,
12 LPC cepstrum channels, 7-29 frames; data/README.md). The channel count and the class count
flow from the data into the encoder's ``in_dim`` and the head's ``num_outputs`` (``model_links``),
so a config gives neither.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from torch.utils.data import DataLoader

from vecset.contracts.data_errors import DataFileError, MissingDataFile
from vecset.contracts.data_spec import DataSpec
from vecset.encoders.timeseries import (
    LabelRow,
    class_names_of,
    collate_series,
    read_header,
    read_labels,
    read_series,
)
from vecset.pipelines.data.base import ModelLink, VecsetDataModule
from vecset.pipelines.timeseries.predictions import SeriesRows
from vecset.shipped import data_file

log = logging.getLogger(__name__)

# the shipped data set (scripts/make_japanese_vowels_csv.py)
SHIPPED = "data/japanese_vowels"


def folder(root: str | None) -> Path:
    """The series folder: ``root``, or the shipped Japanese Vowels where it is None."""
    return data_file(SHIPPED if root is None else root, "root")


def channel_link(root: str | None, labels: str) -> tuple[int, str, str]:
    """The channel count: the header of the first file ``labels.csv`` lists (every file repeats it)."""
    rows = read_labels(folder(root) / labels)
    names = read_header(folder(root) / rows[0].file)
    return len(names), "root", f"{folder(root)} ({len(names)} channels in {rows[0].file})"


def class_link(root: str | None, labels: str) -> tuple[int, str, str]:
    """The class count: the training rows' labels in ``labels.csv``."""
    names = class_names_of(read_labels(folder(root) / labels))
    return len(names), "root", f"{folder(root)} ({len(names)} classes in {labels})"


class TimeSeriesDataModule(VecsetDataModule):
    """Series classification from a folder of CSV files.

    Args:
        root: the folder of series files and ``labels``; None: the shipped Japanese Vowels.
        labels: the labels file in ``root``: columns ``file,label`` and an optional ``split``
            (train, val or test). Without it the series are split here, stratified.
        val_fraction: the share of the training series held out for validation where
            ``labels`` names no ``val`` series (stratified, ``split_seed``).
        test_fraction: the share held out for test where ``labels`` has no ``split`` column.
        split_seed: draws those splits.
        predict_files: series files or folders of them that ``vecset predict`` reads instead
            of the test split (no labels needed; the training channels).

    Batches: ``x`` (B, T, C) float, ``mask`` (B, T) bool, ``y`` (B,) long, ``ids`` (B,).
    """

    predictor = "vecset.pipelines.timeseries.predictor.SeriesPredictor"

    @classmethod
    def input_paths(cls, init_args: dict[str, Any], subcommand: str | None) -> dict[str, Path]:
        """The series folder where one is given (None: the shipped one)."""
        return {"root": Path(init_args["root"])} if init_args.get("root") else {}

    def __init__(self, root: str | None = None, labels: str = "labels.csv", val_fraction: float = 0.2,
                 test_fraction: float = 0.2, split_seed: int = 0, batch_size: int = 32, num_workers: int = 0,
                 predict_files: list[str] | None = None) -> None:
        super().__init__()
        for name, v in (("val_fraction", val_fraction), ("test_fraction", test_fraction)):
            if not 0 < v < 1:
                raise ValueError(f"{name} must be in (0, 1), got {v}")
        self.root, self.labels = folder(root), labels
        self.val_fraction, self.test_fraction, self.split_seed = val_fraction, test_fraction, split_seed
        self.batch_size, self.num_workers = batch_size, num_workers
        self.predict_files = list(predict_files) if predict_files else None
        self.splits: dict[str, list[dict]] = {}
        self.files: list[str] = []  # id -> the series file as the messages and rows name it
        self.labels_of: list[str | None] = []  # id -> its label (None: not known)
        self.channels: list[str] = []

    # -- reading and splitting ----------------------------------------------------------------
    def _read(self, path: Path, shown: str, label: str | None, y: int | None) -> dict:
        x, self.channels = read_series(path, self.channels or None)
        item = {"x": x, "id": len(self.files)}
        if y is not None:
            item["y"] = y
        self.files.append(shown)
        self.labels_of.append(label)
        return item

    def _split(self, rows: list[LabelRow], fraction: float, what: str) -> tuple[list[LabelRow], list[LabelRow]]:
        """``rows`` -> (kept, held out ``fraction`` of each class), stratified, seeded."""
        from sklearn.model_selection import train_test_split

        counts = Counter(r.label for r in rows)
        few = sorted(c for c, n in counts.items() if n < 2)
        if few:
            raise DataFileError(self.root / self.labels, f"class(es) {few} have fewer than 2 training series, too few "
                             f"to hold out {what} series of each class (add series or give a split column)")
        kept, held = train_test_split(rows, test_size=fraction, random_state=self.split_seed,
                                      stratify=[r.label for r in rows])
        return sorted(kept, key=lambda r: r.line), sorted(held, key=lambda r: r.line)

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        path = self.root / self.labels
        rows = read_labels(path)
        self.class_names = class_names_of(rows)
        if rows[0].split is None:
            train, test = self._split(rows, self.test_fraction, "test")
            val: list[LabelRow] = []
        else:
            train, val, test = ([r for r in rows if r.split == s] for s in ("train", "val", "test"))
            if not train:
                raise DataFileError(path, "no row has split 'train' (a model needs training series)")
        if not val:
            train, val = self._split(train, self.val_fraction, "validation")
        index = {c: i for i, c in enumerate(self.class_names)}
        for split, chosen in (("val", val), ("test", test)):
            for r in chosen:
                if r.label not in index:
                    raise DataFileError(path, f"label {r.label!r} of {split} series {r.file} is not a training label "
                                        f"({', '.join(self.class_names)}); a model cannot predict a class it never "
                                        "saw", r.line)
        for split, chosen in (("train", train), ("val", val), ("test", test)):
            for r in chosen:
                if not (self.root / r.file).is_file():
                    raise MissingDataFile(path, f"series file {r.file} not found in {self.root}", r.line)
            self.splits[split] = [self._read(self.root / r.file, r.file, r.label, index[r.label]) for r in chosen]
        if self.predict_files:
            self.splits["predict"] = [self._read(p, str(p), None, None) for p in self._predict_paths()]
        lengths = [len(it["x"]) for items in self.splits.values() for it in items]
        log.info("%s: %d series of %d channels, %d-%d steps, %d classes, per split %s", self.root, len(lengths),
                 len(self.channels), min(lengths), max(lengths), len(self.class_names),
                 {k: len(v) for k, v in self.splits.items()})

    def _predict_paths(self) -> list[Path]:
        """``predict_files``: each CSV file as given, each folder as its CSV files (sorted)."""
        found: list[Path] = []
        for f in self.predict_files or []:
            p = Path(f)
            if p.is_dir():
                inside = sorted(q for q in p.glob("*.csv") if q.name != self.labels)
                if not inside:
                    raise ValueError(f"predict_files: folder {p} holds no .csv series files")
                found += inside
            elif p.is_file():
                found.append(p)
            else:
                raise FileNotFoundError(f"predict_files: {p} does not exist")
        return found

    # -- what the model and the loaders read --------------------------------------------------
    def _loader(self, split: str, shuffle: bool = False) -> DataLoader:
        return DataLoader(self.splits[split], batch_size=self.batch_size, shuffle=shuffle,
                          num_workers=self.num_workers, collate_fn=collate_series)

    def longest_set(self) -> tuple[int, str] | None:
        """The longest series read (one vector per time step)."""
        items = [it for v in self.splits.values() for it in v]
        if not items:
            return None
        longest = max(items, key=lambda it: len(it["x"]))
        return len(longest["x"]), f"{self.root / self.files[longest['id']]} ({len(longest['x'])} time steps)"

    def predict_split(self) -> str:
        return "predict" if self.predict_files else "test"

    def data_spec(self, stage: str) -> DataSpec:
        """The class names, the folder, and at fit the training series (the encoder's channel statistics)."""
        spec = replace(super().data_spec(stage), origin=str(self.root))
        return replace(spec, train_inputs=[it["x"] for it in self.splits["train"]]) if spec.fit else spec

    def describe(self, sample_id: int) -> str:
        """The series' file (relative to ``root``; a predict file as given)."""
        return self.files[sample_id]

    def label_of(self, sample_id: int) -> str | None:
        """The series' label where known."""
        return self.labels_of[sample_id]

    def test_items(self) -> list[dict]:
        """The test series: dicts of ``x`` (T, C), ``y`` and ``id``, in the loader's order."""
        return self.splits["test"]

    def class_balance(self) -> dict[str, dict[str, int]] | None:
        return {k: {c: sum(it["y"] == i for it in v) for i, c in enumerate(self.class_names or [])}
                for k, v in self.splits.items() if k != "predict"}

    def attention_example(self) -> tuple[dict, list[str], str, str]:
        """The first test series as a batch, its steps named t0, t1, ... (``VectorAttentionReport``)."""
        item = self.splits["test"][0]
        return collate_series([item]), [f"t{i}" for i in range(len(item["x"]))], "time step", \
            f"{self.describe(item['id'])} (label {self.label_of(item['id'])})"

    # -- what the generic layers ask the job --------------------------------------------------
    def prediction_output(self, out_dir: Path, model: Any) -> SeriesRows:
        """A row per series: file, label (where known), predicted class, probability."""
        return SeriesRows(self, out_dir)

    def default_reports(self) -> list:
        """The per-class report (accuracy per class, confusion matrix) and one block's attention
        between the time steps of a test series."""
        from vecset.pipelines.reports.defaults import scored  # matplotlib: when asked
        from vecset.pipelines.reports.vector_attention import VectorAttentionReport

        return [*scored(self), VectorAttentionReport()]

    @classmethod
    def model_links(cls) -> list[ModelLink]:
        """The files' channel count is the encoder's ``in_dim``; the training labels' count the
        head's ``num_outputs``."""
        return [ModelLink("channel count", ("root", "labels"), "encoder", "in_dim", channel_link),
                ModelLink("class count", ("root", "labels"), "head", "num_outputs", class_link)]
