"""MoleculeDataModule: a CSV of SMILES with one or more numeric targets -> graph batches.

The chemistry is ``encoders/graph``'s: ``read_molecule_csv`` reads the file (targets or class
labels, every unusable row counted with its line and reason) and featurizes the molecules,
``DescriptorScaler`` standardizes descriptors, ``scaffold_groups`` groups molecules by
Bemis-Murcko scaffold. This module finds the file, splits, calls the reader and batches.

Splits: ``splits.py`` (``MoleculeSplit``: random, scaffold, scaffold_random or a column).

Every molecule is featurized once in ``setup`` (graph tensors, optional descriptors) and
kept for all epochs. The featurized molecules are cached on disk (``encoders/graph/cache.py``:
keyed by the SMILES, the featurizer's settings, RDKit's version and the featurization code), so
a second run, and each member of an ensemble after the first, reads them instead of
featurizing again (B3DB's 7,800 molecules: about a minute). Rows that cannot be used are
skipped, counted and logged with their line number (missing or non-numeric target, or one
beyond float32; SMILES that RDKit rejects, is empty, or has more than ``max_atoms`` heavy atoms;
an empty class label); a missing or duplicated column, a row with the wrong number of fields,
invalid UTF-8 and a class label other than the declared ``classes`` are errors naming the file
and line.

The console gets the number of skipped rows and the first few; all of them (line, SMILES,
reason) go to ``skipped_rows.csv`` in the run directory (the trainer's ``log_dir``, a task's
folder in it for a multi-task run) when the module is set up by a Trainer; set up without one,
they are in ``MoleculeDataModule.skipped``.

Duplicates are compared on RDKit's canonical SMILES and reported, not dropped: test (and
validation) molecules that are also in the training split (their scores are not on unseen
molecules), and one molecule in several rows with different targets. Each is a warning naming
the file, the count and a few rows; every row involved goes to ``duplicates.csv`` beside
``skipped_rows.csv`` (``MoleculeDataModule.duplicates`` counts them). Too few rows for the split
is an error naming the file, the row count and the split sizes.

Classification (``label_column`` and ``classes``): ``y`` is the index of the row's label in
``classes``, and ``class_names`` are the classes, as for every other vecset classifier.
"""

from __future__ import annotations

import csv
import hashlib
import logging
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from vecset.contracts.data_spec import DataSpec
from vecset.encoders.graph import (
    DescriptorScaler,
    FeatureCache,
    MoleculeTable,
    canonical_smiles,
    read_molecule_csv,
)
from vecset.pipelines.console import track
from vecset.pipelines.data.base import ModelLink, VecsetDataModule
from vecset.pipelines.data.gathered import BucketedCollate, LengthBuckets
from vecset.pipelines.data.options import BucketedPlacement, as_group
from vecset.pipelines.molecules.conformers import ConformerDraw
from vecset.pipelines.molecules.device import NO_DISTANCE, MoleculeDeviceLoader, MoleculePlacement
from vecset.pipelines.molecules.links import molecule_links
from vecset.pipelines.molecules.options import MoleculeFeatures, MoleculeSplit
from vecset.pipelines.molecules.predictions import MoleculeRows
from vecset.pipelines.molecules.rows import SHOWN, find_duplicates, short
from vecset.pipelines.molecules.splits import check_sizes, split_rows
from vecset.shipped import data_file

log = logging.getLogger(__name__)

class MoleculeDataModule(VecsetDataModule):
    """Molecule property regression or classification from a CSV of SMILES.

    Args:
        csv_path: the data file.
        smiles_column: column holding SMILES.
        target_columns: one or more numeric target columns (predicted in their units); or
        label_column: a column of class labels (classification; then no ``target_columns``),
        classes: the labels ``label_column`` may hold, in class-index order (``[BBB-, BBB+]``:
            BBB+ is class 1, the positive class of ROC-AUC and PR-AUC).
        split: how the rows are split (``MoleculeSplit``: ``method``, ``seed``, ``column``,
            ``val_fraction``).
        features: how each molecule is featurized (``MoleculeFeatures``: ``max_atoms``,
            ``max_dist``, ``lap_pe_k``, ``descriptors``, ``geometry``, ``charges``, ``surface``,
            ``conformers``); the graph encoder's tables and widths and the head's
            ``extra_features`` follow them (linked values; the encoder checks them at setup).
        batch_size: molecules per batch.
        predict_csv: a CSV of SMILES for ``vecset predict`` (its ``smiles_column``); with
            ``--ckpt_path`` its rows are predicted by the molecule predictor (``predict_table``:
            the rows of ``vecset predict --model``, invalid ones in place with their error);
            without (the config's own weights), invalid rows go to ``invalid_rows.csv`` and the
            rest are predicted. Without it, ``predict`` runs on the test split.
        num_workers: DataLoader workers.
        cache: keep the featurized molecules on disk and read them from there when the same
            SMILES come again with the same settings (``encoders/graph/cache.py``).
        cache_dir: the cache's folder; None: ``$VECSET_CACHE/molecules``, else
            ``$XDG_CACHE_HOME/vecset/molecules``, else ``~/.cache/vecset/molecules``.
        placement: the featurized splits on the training device, packed into padded tensors
            (``molecules/device.py``), and length buckets in atoms (``BucketedPlacement``).

    Batches: see ``encoders.graph.pad_graphs``; ``y`` (B, T) float, or (B,) long class indices.
    """

    predictor = "vecset.pipelines.molecules.predictor.MoleculePredictor"

    @classmethod
    def input_paths(cls, init_args: dict[str, Any], subcommand: str | None) -> dict[str, Path]:
        """The CSV files."""
        return {k: Path(init_args[k]) for k in ("csv_path", "predict_csv") if init_args.get(k)}

    def __init__(self, csv_path: str, smiles_column: str = "smiles", target_columns: list[str] | None = None,
                 label_column: str | None = None, classes: list[str] | None = None,
                 split: MoleculeSplit = MoleculeSplit(), features: MoleculeFeatures = MoleculeFeatures(),
                 batch_size: int = 32, predict_csv: str | None = None, num_workers: int = 0, cache: bool = True,
                 cache_dir: str | None = None, placement: BucketedPlacement = BucketedPlacement()) -> None:
        super().__init__()
        self.split, self.features = as_group(MoleculeSplit, split, "split"), as_group(MoleculeFeatures, features,
                                                                                        "features")
        placement = as_group(BucketedPlacement, placement, "placement")
        self.buckets = LengthBuckets(placement.length_buckets)
        self.placement = MoleculePlacement(placement.on_device, placement.device_memory_share, self.buckets,
                                           placement.bucket_batches)
        if label_column is not None:
            if target_columns:
                raise ValueError("MoleculeDataModule: give target_columns (regression) or label_column "
                                 f"(classification), not both (got {target_columns} and {label_column!r})")
            if not classes or len(set(classes)) != len(classes) or len(classes) < 2:
                raise ValueError(f"label_column {label_column!r} needs classes: two or more distinct labels, "
                                 f"got {classes}")
        elif not target_columns:
            raise ValueError("MoleculeDataModule needs target_columns (one or more numeric columns) or "
                             "label_column and classes (classification)")
        self.csv_path, self.smiles_column = data_file(csv_path, "csv_path"), smiles_column
        self.label_column = label_column
        self.class_names = list(classes) if label_column is not None else None
        self.target_names = list(target_columns or [])
        self.batch_size, self.num_workers = batch_size, num_workers
        self.predict_csv = Path(predict_csv) if predict_csv else None
        self.featurizer = self.features.featurizer()
        self.cache = FeatureCache(cache_dir) if cache else None
        self.items: list[dict] | None = None
        self.splits: dict[str, list[dict]] = {}
        self.skipped: list[dict] = []  # {"line", "smiles", "reason"} of the training file
        self.invalid_predict: list[dict] = []
        self.predict_items: list[dict] | None = None
        self.scaler: DescriptorScaler | None = None  # fit on the training split when descriptors are on
        self._keys: dict[str, list[str]] = {}  # canonical SMILES per split, at setup
        self.rows = 0  # data rows of the training file
        # at setup: "test in train", "val in train" (distinct molecules), "different targets"
        self.duplicates: dict[str, int] = {}

    # -- reading: encoders/graph's reader --------------------------------------------
    def _progress(self):
        """A progress bar over the featurizing loop, unless the Trainer's is switched off."""
        if self.trainer is not None and self.trainer.progress_bar_callback is None:
            return None
        return track

    def _read(self, path: Path, labelled: bool) -> MoleculeTable:
        # what is predicted reads conformer 0 alone: the others (conformers > 1) are not embedded
        featurizer = self.featurizer if labelled else self.featurizer.one_conformer()
        return read_molecule_csv(
            path, featurizer, self.smiles_column,
            target_columns=self.target_names if labelled else (),
            label_column=self.label_column if labelled else None, classes=self.class_names,
            split_column=self.split.column if labelled and self.split.method == "column" else None,
            cache=self.cache, progress=self._progress())

    def _load(self) -> None:
        table = self._read(self.csv_path, labelled=True)
        items, skipped = table.items, table.skipped
        if skipped:
            where = self._write_skipped(skipped)
            log.warning("%s: skipped %d of %d rows (%s%s); all %d: %s", self.csv_path, len(skipped), table.rows,
                        "; ".join(f"line {s['line']} {short(s['smiles'])}: {short(s['reason'], 80)}"
                                  for s in skipped[:SHOWN]),
                        "; ..." if len(skipped) > SHOWN else "", len(skipped), where)
        if not items:
            raise ValueError(f"{self.csv_path}: no usable rows ({len(skipped)} skipped)")
        self.items, self.skipped, self.rows = items, skipped, table.rows

    def _write_skipped(self, skipped: list[dict]) -> str:
        """``skipped_rows.csv`` in the run directory (``run_dir``); where the list is, for the log."""
        return self._write_rows("skipped_rows.csv", skipped, ["line", "smiles", "reason"],
                                "MoleculeDataModule.skipped")

    def _write_rows(self, name: str, rows: list[dict], fields: list[str], otherwise: str) -> str:
        """``rows`` as the CSV ``name`` in the run directory of the Trainer this module is attached
        to (only the global-zero process writes); where they are, for the log."""
        run_dir = self.run_dir()  # a broadcast under DDP: every process asks
        if run_dir is None:
            return f"{otherwise} (set up without a Trainer: no run directory)"
        path = run_dir / name
        if self.trainer.is_global_zero:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=fields)
                w.writeheader()
                w.writerows(rows)
        return str(path)

    def _check_duplicates(self) -> None:
        """Warn about, count and list (``duplicates.csv``) the evaluation molecules that are
        also in the training split, and the molecules with rows of different targets (``rows.py``)."""
        self._keys, self.duplicates, listed = find_duplicates(self.splits, self.class_names, self.csv_path)
        if listed:
            where = self._write_rows("duplicates.csv", listed, ["check", "smiles", "line", "split", "target"],
                                     "MoleculeDataModule.duplicates")
            log.warning("%s: %d rows involved in duplicates: %s", self.csv_path, len(listed), where)

    def setup(self, stage: str | None = None) -> None:
        if self.items is None:
            self._load()
            idx = split_rows(self.split, self.items, self.csv_path)
            check_sizes(idx, self.split, self.rows, self.csv_path)
            self.splits = {k: [self.items[i] for i in v] for k, v in idx.items()}
            if self.features.descriptors:
                self.scaler = DescriptorScaler().fit_items(self.splits["train"])
                self.scaler.standardize(self.items)
            log.info("%s: %s molecules", self.csv_path, {k: len(v) for k, v in self.splits.items()})
            self._check_duplicates()
        if stage == "predict" and self.predict_csv is not None and self.predict_items is None:
            self._load_predict()

    def _load_predict(self) -> None:
        table = self._read(self.predict_csv, labelled=False)
        items, invalid = table.items, table.skipped
        if self.features.descriptors:
            self.scaler.standardize(items)
        if invalid:
            log.warning("%s: %d of %d SMILES could not be predicted (%s%s); all of them go to invalid_rows.csv "
                        "beside the predictions", self.predict_csv, len(invalid), table.rows,
                        "; ".join(f"line {s['line']} {short(s['smiles'])}: {short(s['reason'], 80)}"
                                  for s in invalid[:SHOWN]), "; ..." if len(invalid) > SHOWN else "")
        self.predict_items, self.invalid_predict = items, invalid

    # -- loaders ----------------------------------------------------------------------
    def collate(self, items: list[dict]) -> dict:
        """Padded graph batches (``MoleculeFeaturizer.collate``: ``pad_graphs``, unreachable =
        ``max_dist + 1``); the loaders call the featurizer's directly."""
        return self.featurizer.collate(items)

    def _loader(self, items: list[dict] | ConformerDraw, shuffle: bool = False) -> DataLoader:
        collate = self.featurizer.collate
        if self.buckets.on:  # pad_graphs, then padded on to the batch's length bucket
            unreachable = self.featurizer.max_dist + 1
            collate = BucketedCollate(collate, self.buckets, {
                "x": (0.0, (1,)), "mask": (False, (1,)), "degree": (0, (1,)), "lap": (0.0, (1,)),
                "dist": (unreachable, (1, 2)), "edge": (0, (1, 2)), "dist3d": (NO_DISTANCE, (1, 2))})
        return DataLoader(items, batch_size=self.batch_size, shuffle=shuffle, collate_fn=collate,
                          num_workers=self.num_workers)

    def _split_loader(self, split: str, shuffle: bool = False) -> DataLoader | MoleculeDeviceLoader:
        """The split's batches on the training device where they are placed (``on_device``), else
        the classic DataLoader."""
        device = self.trainer.strategy.root_device if self.trainer is not None else torch.device("cpu")
        if (loader := self.placement.loader(self, split, shuffle, device)) is not None:
            return loader
        items = self.splits[split]
        if split == "train" and self.featurizer.conformers > 1:  # a random conformer at each draw
            items = ConformerDraw(items)
        return self._loader(items, shuffle=shuffle)

    def train_dataloader(self) -> DataLoader | MoleculeDeviceLoader:
        return self._split_loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader | MoleculeDeviceLoader:
        return self._split_loader("val")

    def test_dataloader(self) -> DataLoader | MoleculeDeviceLoader:
        return self._split_loader("test")

    def predict_dataloader(self) -> DataLoader:
        if self.predict_csv is not None:
            if not self.predict_items:
                raise ValueError(f"{self.predict_csv}: none of its SMILES could be featurized "
                                 f"({len(self.invalid_predict)} invalid)")
            return self._loader(self.predict_items)
        return self._loader(self.splits["test"])

    # -- what the task and the writer need -------------------------------------------
    @property
    def descriptor_dim(self) -> int:
        return 0 if self.scaler is None else self.scaler.dim

    def data_spec(self, stage: str) -> DataSpec:
        """The descriptors' width (checked against the head's ``extra_features`` at every
        stage) and how the graphs were made (checked against the encoder's tables); at fit, the
        training targets (the regression scaler; class weights)."""
        spec = replace(super().data_spec(stage), feature_width=self.descriptor_dim, origin=str(self.csv_path),
                       structure=self.featurizer.structure)
        if spec.fit:
            spec = replace(spec, train_targets=torch.stack([it["y"] for it in self.splits["train"]]))
        return spec

    def _predicting(self) -> bool:
        """Ids name rows of ``predict_csv`` (once it is read) rather than of ``csv_path``."""
        return self.predict_csv is not None and self.predict_items is not None

    def _by_id(self) -> dict[int, dict]:
        return {it["id"]: it for it in (self.predict_items if self._predicting() else self.items)}

    def describe(self, sample_id: int) -> str:
        """``path:line SMILES`` of the row the sample came from."""
        item = self._by_id()[sample_id]
        return f"{self.predict_csv if self._predicting() else self.csv_path}:{item['line']} {item['smiles']}"

    def source_row(self, sample_id: int) -> tuple[int, str]:
        """The CSV line and SMILES the sample came from (``predict_csv``'s once it is read)."""
        item = self._by_id()[sample_id]
        return item["line"], item["smiles"]

    # -- what reports read ------------------------------------------------------------
    def test_items(self) -> list[dict]:
        """The test molecules: dicts of the featurized graph (``x`` (n_atoms, F), ...), ``y``,
        ``smiles``, ``line`` and ``id``."""
        return self.splits["test"]

    def item_keys(self, split: str) -> list[str]:
        """The canonical SMILES of the molecules of ``split`` (the leakage check, ``overlap.py``)."""
        return self._keys[split]

    def item_keys_of(self, path: str) -> list[str]:
        """The canonical SMILES of a CSV's ``smiles_column`` (a pretraining set's molecules)."""
        from vecset.encoders.files import read_csv_rows

        df, _ = read_csv_rows(Path(path))
        column = self.smiles_column if self.smiles_column in df.columns else "smiles"
        if column not in df.columns:
            raise ValueError(f"{path}: no column {self.smiles_column!r}; its columns are {list(df.columns)}")
        return [canonical_smiles(s) for s in df[column]]

    def label_key(self) -> str:
        """The file's SHA-256 and the target columns (or the label column): a copy of the file
        with the same columns has the same labels."""
        digest = hashlib.sha256(self.csv_path.read_bytes()).hexdigest()[:16]
        return f"{self.csv_path.name} sha256 {digest}, {self.label_column or ', '.join(self.target_names)}"

    def class_balance(self) -> dict[str, dict[str, int]] | None:
        """Per split, the number of molecules of each class (classification; None for regression)."""
        if self.class_names is None:
            return None
        return {k: {c: int(sum(int(it["y"]) == i for it in v)) for i, c in enumerate(self.class_names)}
                for k, v in self.splits.items()}

    # -- what the generic layers ask the job --------------------------------------------------
    @classmethod
    def model_links(cls) -> list[ModelLink]:
        """``links.py``'s ``molecule_links``: graph tables, atom widths, 3-D geometry, descriptor
        and output counts, each given once, at the data."""
        return molecule_links()

    def predict_table(self) -> tuple[Path, str] | None:
        """``predict_csv`` and its SMILES column: predicted by the molecule predictor, the rows of
        ``vecset predict --model`` (its similarity, domain and uncertainty columns)."""
        return None if self.predict_csv is None else (self.predict_csv, self.smiles_column)

    def prediction_output(self, out_dir: Path, model) -> MoleculeRows:
        """Per molecule its CSV line and SMILES and the prediction; the invalid rows apart."""
        return MoleculeRows(self, out_dir)

    def default_reports(self) -> list:
        """Parity and uncertainty (regression) or per-class (and ROC/PR for two classes), then the
        atoms' pooling attention."""
        from vecset.pipelines.molecules.reports import (
            PoolingAttentionReport,  # matplotlib: when asked
        )
        from vecset.pipelines.reports.binary import BinaryReport
        from vecset.pipelines.reports.defaults import scored
        from vecset.pipelines.reports.uncertainty import UncertaintyReport

        if self.class_names is None:
            extra: list = [UncertaintyReport()]
        else:
            extra = [BinaryReport()] if len(self.class_names) == 2 else []
        return [*scored(self), *extra, PoolingAttentionReport()]


def rmse(pred: np.ndarray, true: np.ndarray) -> float:
    return float(math.sqrt(np.mean((np.asarray(pred) - np.asarray(true)) ** 2)))


__all__ = ["MoleculeDataModule", "rmse"]
