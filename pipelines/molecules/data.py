"""MoleculeDataModule: a CSV of SMILES with one or more numeric targets -> graph batches.

The chemistry is ``encoders/graph``'s: ``read_molecule_csv`` reads the file (targets or class
labels, every unusable row counted with its line and reason) and featurizes the molecules,
``DescriptorScaler`` standardizes descriptors, ``scaffold_groups`` groups molecules by
Bemis-Murcko scaffold. This module finds the file, splits, calls the reader and batches.

Splits: ``random`` (``numpy.random.default_rng(split_seed).permutation(n)``, first 80%
train, next 10% validation, the rest test: the FreeSolv benchmark splits for seeds 0..4),
``scaffold`` (Bemis & Murcko 1996 scaffold groups, largest first, to train, then validation,
then test; as in DeepChem's ScaffoldSplitter), ``scaffold_random`` (whole scaffold groups in
``split_seed``'s random order, big ones first: Chemprop's balanced scaffold split), or ``column``
(a column of the file with train/val/test; without val rows, ``val_fraction`` of the train
rows, drawn with ``split_seed``, validate).

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
from typing import Any, Literal

import numpy as np
import torch
from torch.utils.data import DataLoader

from vecset.contracts.data_spec import DataSpec
from vecset.encoders.graph import (
    ATOM_FEATURE_WIDTH,
    BOND_EDGE_TYPES,
    DESCRIPTOR_NAMES,
    DescriptorScaler,
    FeatureCache,
    MoleculeFeaturizer,
    MoleculeTable,
    atom_feature_width,
    canonical_smiles,
    read_molecule_csv,
    scaffold_groups,
)
from vecset.pipelines.console import track
from vecset.pipelines.data.base import ModelLink, VecsetDataModule, fixed
from vecset.pipelines.data.gathered import BucketedCollate, LengthBuckets
from vecset.pipelines.molecules.conformers import ConformerDraw
from vecset.pipelines.molecules.device import NO_DISTANCE, MoleculeDeviceLoader, MoleculePlacement
from vecset.pipelines.molecules.predictions import MoleculeRows
from vecset.shipped import data_file

log = logging.getLogger(__name__)

Split = Literal["random", "scaffold", "scaffold_random", "column"]

SHOWN_SKIPPED = 3  # skipped rows named on the console; all of them go to skipped_rows.csv


def _short(text: str, width: int = 60) -> str:
    """``text`` quoted, cut to ``width`` characters (a SMILES of 300 characters fills a line)."""
    return repr(text) if len(text) <= width else repr(text[: width - 3] + "...")


def random_split(n: int, seed: int, fractions: tuple[float, float] = (0.8, 0.1)) -> dict[str, np.ndarray]:
    """``default_rng(seed).permutation(n)``: first int(0.8 n) train, next int(0.1 n) val, rest test."""
    perm = np.random.default_rng(seed).permutation(n)
    n_train, n_val = int(fractions[0] * n), int(fractions[1] * n)
    return {"train": perm[:n_train], "val": perm[n_train : n_train + n_val], "test": perm[n_train + n_val :]}


def scaffold_split(smiles: list[str], fractions: tuple[float, float] = (0.8, 0.1),
                   seed: int | None = None) -> dict[str, np.ndarray]:
    """Bemis-Murcko scaffold groups (``encoders.graph.scaffold_groups``), each assigned whole to
    train, then val, then test.

    ``seed`` None: largest group first (DeepChem's ScaffoldSplitter; deterministic). A seed:
    Chemprop's balanced scaffold split: the groups larger than half the test size first, then
    the rest, each set in ``default_rng(seed)`` order, so the big scaffolds stay in train and
    the held-out parts get a random mix of the small ones. An empty part (too few scaffold
    groups for the fractions) is a ValueError: its metrics would be undefined.
    """
    groups = scaffold_groups(smiles)
    n = len(smiles)
    if seed is None:
        ordered = sorted(groups, key=lambda g: (-len(g), g[0]))
    else:
        rng = np.random.default_rng(seed)
        limit = (1 - fractions[0] - fractions[1]) * n / 2
        big = [g for g in groups if len(g) > limit]
        small = [g for g in groups if len(g) <= limit]
        ordered = [big[i] for i in rng.permutation(len(big))] + [small[i] for i in rng.permutation(len(small))]
    out: dict[str, list[int]] = {"train": [], "val": [], "test": []}
    for g in ordered:
        if len(out["train"]) + len(g) <= fractions[0] * n:
            out["train"] += g
        elif len(out["val"]) + len(g) <= fractions[1] * n:
            out["val"] += g
        else:
            out["test"] += g
    empty = [k for k, v in out.items() if not v]
    if empty:
        raise ValueError(f"scaffold split of {n} molecules ({len(groups)} scaffold groups, largest "
                         f"{max(map(len, groups))}): the {' and '.join(empty)} part(s) got no molecules "
                         f"(fractions train {fractions[0]}, val {fractions[1]}, test the rest; groups are never "
                         "divided); use more molecules, other fractions or a random split")
    return {k: np.array(sorted(v), dtype=np.int64) for k, v in out.items()}



def graph_links() -> list[ModelLink]:
    """``max_dist`` and ``lap_pe_k`` of a graph data module -> the ``GraphEncoder``'s."""
    return [ModelLink(f"graph {name}", (name,), "encoder", name, lambda v, name=name: (v, name, str(v)))
            for name in ("max_dist", "lap_pe_k")]


def atom_width(charges: bool, surface: bool) -> tuple[int, str, str]:
    """The atom feature width: 42, one more with ``charges``, two more with ``surface``."""
    n = atom_feature_width(bool(charges), bool(surface))
    return n, "surface" if surface else "charges", f"{'true' if surface else 'false'} ({n} atom features with " \
        f"charges {'true' if charges else 'false'}, surface {'true' if surface else 'false'})"


def atom_links(solvation: bool = False) -> list[ModelLink]:
    """The molecule featurizer's atom feature width (42; with ``solvation``, from the data's
    ``charges`` and ``surface``: ``atom_width``) and bond type count (6), -> the
    ``GraphEncoder``'s ``node_dim`` and ``num_edge_types``."""
    width = (ModelLink("atom feature width", ("charges", "surface"), "encoder", "node_dim", atom_width)
             if solvation else fixed("atom feature width", "encoder", "node_dim", ATOM_FEATURE_WIDTH,
                                     f"{ATOM_FEATURE_WIDTH} atom features"))
    return [width,
            fixed("bond type count", "encoder", "num_edge_types", BOND_EDGE_TYPES, f"{BOND_EDGE_TYPES} bond types")]


def descriptor_count(descriptors: bool) -> tuple[int, str, str]:
    """The width of ``batch["features"]``: RDKit's 2-D descriptors (``DESCRIPTOR_NAMES``: 217 with
    RDKit 2026.09) or none."""
    n = len(DESCRIPTOR_NAMES) if descriptors else 0
    return n, "descriptors", f"true ({n} RDKit 2-D descriptors)" if descriptors else "false"


def output_count(target_columns: list[str] | None, label_column: str | None,
                 classes: list[str] | None) -> tuple[int | None, str, str]:
    """The head's outputs: the classes of ``label_column``, else one per target column (None
    where neither is given: the data module's constructor says what is missing)."""
    if label_column is not None:
        n = len(classes or [])
        return n or None, "classes", f"{classes} ({n} classes)"
    n = len(target_columns or [])
    return n or None, "target_columns", f"{target_columns} ({n} target{'s' if n != 1 else ''})"

class MoleculeDataModule(VecsetDataModule):
    """Molecule property regression or classification from a CSV of SMILES.

    Args:
        csv_path: the data file.
        smiles_column: column holding SMILES.
        target_columns: one or more numeric target columns (predicted in their units); or
        label_column: a column of class labels (classification; then no ``target_columns``),
        classes: the labels ``label_column`` may hold, in class-index order (``[BBB-, BBB+]``:
            BBB+ is class 1, the positive class of ROC-AUC and PR-AUC).
        split: ``random``, ``scaffold``, ``scaffold_random`` or ``column`` (see the module docstring).
        split_seed: seed of the random split (and of the validation draw for ``column``).
        split_column: the column for ``split="column"`` (values train / val / test).
        val_fraction: share of the train rows held out when the column has no val rows.
        max_atoms: molecules with more heavy atoms are skipped and reported.
        max_dist: shortest-path distances are clipped here; lap_pe_k: Laplacian eigenvectors
            per graph. The data's values: the encoder checks at setup that its tables fit them
            (``GraphEncoder.receive``), a mismatch is an error naming both.
        descriptors: add standardized RDKit 2-D descriptors as ``batch["features"]`` (set
            the head's ``extra_features`` to their number, 217 with RDKit 2026.09; a
            mismatch is an error at setup).
        batch_size: molecules per batch.
        predict_csv: a CSV of SMILES for ``vecset predict`` (its ``smiles_column``); with
            ``--ckpt_path`` its rows are predicted by the molecule predictor (``predict_table``:
            the rows of ``vecset predict --model``, invalid ones in place with their error);
            without (the config's own weights), invalid rows go to ``invalid_rows.csv`` and the
            rest are predicted. Without it, ``predict`` runs on the test split.
        num_workers: DataLoader workers.
        cache: keep the featurized molecules on disk and read them from there when the same
            SMILES come again with the same settings (``encoders/graph/cache.py``).
        geometry: also embed one 3-D conformer per molecule (RDKit ETKDG with a fixed seed, then
            MMFF where it converges) for ``GraphEncoder(geometry="distance_gaussian")``; molecules
            that cannot be embedded keep their 2-D graph and are counted in the log.
        charges: one more atom feature, the Gasteiger partial charge with the atom's hydrogens'
            (``encoders/graph/solvation.py``); atoms RDKit has no charge for get 0, counted in the log.
        surface: two more, the atom's solvent-accessible surface (FreeSASA on the conformer, with
            its hydrogens', A^2 / 100) and a "no surface" flag where there is no conformer
            (counted in the log); needs ``geometry``. The encoder's ``node_dim`` follows both
            (a linked value).
        conformers: with ``geometry``, the conformers embedded per molecule (Uni-Mol style
            augmentation): 1, the default, embeds one; k > 1 embeds k (same ETKDG seed, MMFF
            each; cached with k in the key) and each training draw takes one of a molecule's at
            random (seeded: ``molecules/conformers.py``), while validation, test and predict
            take conformer 0, the single-conformer one (``predict_csv`` embeds only it). The
            surface stays conformer 0's. Molecules with fewer than k embedded are counted in the log.
        cache_dir: the cache's folder; None: ``$VECSET_CACHE/molecules``, else
            ``$XDG_CACHE_HOME/vecset/molecules``, else ``~/.cache/vecset/molecules``.
        on_device: keep the featurized splits on the training device, packed into padded
            tensors, and gather the batches there (``molecules/device.py``: the classic
            collate's batches; seeded order, every molecule once an epoch, exact mid-epoch
            resume): ``true``, ``false`` (the classic DataLoader) or ``auto`` (there when all
            splits take at most ``device_memory_share`` of the device's memory). Said in one line
            at the start.
        length_buckets: pad each batch to a width from a small fixed set instead of its largest
            molecule, so that shapes repeat (fewer recompilations under ``torch.compile``):
            ``pow2`` (the next power of two, at least 8 atoms) or increasing edges in atoms
            (``[16, 32, 64]``; a larger molecule pads to its batch's own size); null: none. The
            padding is masked (the predictions are the same).
        bucket_batches: draw each training batch from one length bucket (less padding), the
            batches in a seeded order; needs ``length_buckets`` and the data on the device.

    Batches: see ``encoders.graph.pad_graphs``; ``y`` (B, T) float, or (B,) long class indices.
    """

    predictor = "vecset.pipelines.molecules.predictor.MoleculePredictor"

    @classmethod
    def input_paths(cls, init_args: dict[str, Any], subcommand: str | None) -> dict[str, Path]:
        """The CSV files."""
        return {k: Path(init_args[k]) for k in ("csv_path", "predict_csv") if init_args.get(k)}

    def __init__(self, csv_path: str, smiles_column: str = "smiles", target_columns: list[str] | None = None,
                 label_column: str | None = None, classes: list[str] | None = None, split: Split = "random", split_seed: int = 0, split_column: str = "split",
                 val_fraction: float = 0.1, max_atoms: int = 100, max_dist: int = 8, lap_pe_k: int = 0,
                 descriptors: bool = False, batch_size: int = 32, predict_csv: str | None = None,
                 num_workers: int = 0, cache: bool = True, cache_dir: str | None = None,
                 geometry: bool = False, on_device: bool | Literal["auto"] = False, device_memory_share: float = 0.5,
                 length_buckets: Literal["pow2"] | list[int] | None = None, bucket_batches: bool = False,
                 charges: bool = False, surface: bool = False, conformers: int = 1) -> None:
        super().__init__()
        if surface and not geometry:
            raise ValueError("MoleculeDataModule: surface: true needs geometry: true (the solvent-accessible "
                             "surface is measured on the 3-D conformer)")
        if isinstance(conformers, int) and conformers > 1 and not geometry:  # other values: the featurizer's error
            raise ValueError(f"MoleculeDataModule: conformers: {conformers} needs geometry: true (the conformers are "
                             "3-D embeddings)")
        self.buckets = LengthBuckets(length_buckets)
        self.placement = MoleculePlacement(on_device, device_memory_share, self.buckets, bucket_batches)
        if split not in ("random", "scaffold", "scaffold_random", "column"):
            raise ValueError(f"split must be 'random', 'scaffold', 'scaffold_random' or 'column', got {split!r}")
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
        self.split, self.split_seed, self.split_column = split, split_seed, split_column
        self.val_fraction, self.max_atoms, self.max_dist = val_fraction, max_atoms, max_dist
        self.lap_pe_k, self.descriptors, self.batch_size = lap_pe_k, descriptors, batch_size
        self.predict_csv = Path(predict_csv) if predict_csv else None
        self.num_workers = num_workers
        self.featurizer = MoleculeFeaturizer(max_atoms, max_dist, lap_pe_k, descriptors, geometry, charges, surface,
                                             conformers)
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
            split_column=self.split_column if labelled and self.split == "column" else None,
            cache=self.cache, progress=self._progress())

    def _load(self) -> None:
        table = self._read(self.csv_path, labelled=True)
        items, skipped = table.items, table.skipped
        if skipped:
            where = self._write_skipped(skipped)
            log.warning("%s: skipped %d of %d rows (%s%s); all %d: %s", self.csv_path, len(skipped), table.rows,
                        "; ".join(f"line {s['line']} {_short(s['smiles'])}: {_short(s['reason'], 80)}"
                                  for s in skipped[:SHOWN_SKIPPED]),
                        "; ..." if len(skipped) > SHOWN_SKIPPED else "", len(skipped), where)
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
        also in the training split, and the molecules with rows of different targets."""
        # each item's canonical SMILES is the reader's (from its one parse of the molecule)
        self._keys = {k: [it["canonical_smiles"] for it in v] for k, v in self.splits.items()}
        split_of = {it["id"]: k for k, v in self.splits.items() for it in v}
        rows_of: dict[str, list[dict]] = {}
        for it in self.items:
            rows_of.setdefault(it["canonical_smiles"], []).append(it)

        def target(it: dict) -> str:
            y = it["y"]
            return self.class_names[int(y)] if self.class_names is not None else " ".join(f"{v:g}" for v in y.tolist())

        def lines(key: str, split: str) -> str:
            found = [str(it["line"]) for it in rows_of[key] if split_of[it["id"]] == split]
            return f"line{'s' if len(found) > 1 else ''} {', '.join(found)}"

        def row(check: str, it: dict) -> dict:
            return {"check": check, "smiles": it["canonical_smiles"], "line": it["line"], "split": split_of[it["id"]],
                    "target": target(it)}

        listed: list[dict] = []
        self.duplicates = {}
        train = set(self._keys["train"])
        for k in ("test", "val"):
            shared = sorted(set(self._keys[k]) & train)
            self.duplicates[f"{k} in train"] = len(shared)
            if not shared:
                continue
            listed += [row(f"{k} in train", it) for key in shared for it in rows_of[key]
                       if split_of[it["id"]] in (k, "train")]
            shown = "; ".join(f"{_short(key, 40)} ({k} {lines(key, k)}, train {lines(key, 'train')})"
                              for key in shared[:SHOWN_SKIPPED])
            log.warning("%s: %d of %d %s molecules are also in the training split (same canonical SMILES: their "
                        "scores are not on unseen molecules): %s%s", self.csv_path, len(shared),
                        len(set(self._keys[k])), k, shown,
                        "; ..." if len(shared) > SHOWN_SKIPPED else "")
        conflicts = [key for key, its in rows_of.items() if len({target(it) for it in its}) > 1]
        self.duplicates["different targets"] = len(conflicts)
        if conflicts:
            listed += [row("different targets", it) for key in conflicts for it in rows_of[key]]
            shown = "; ".join(f"{_short(key, 40)}: " + ", ".join(f"line {it['line']} {target(it)}" for it in rows_of[key])
                              for key in conflicts[:SHOWN_SKIPPED])
            log.warning("%s: %d molecules are in several rows with different targets (same canonical SMILES): "
                        "%s%s", self.csv_path, len(conflicts), shown, "; ..." if len(conflicts) > SHOWN_SKIPPED else "")
        if listed:
            where = self._write_rows("duplicates.csv", listed, ["check", "smiles", "line", "split", "target"],
                                     "MoleculeDataModule.duplicates")
            log.warning("%s: %d rows involved in duplicates: %s", self.csv_path, len(listed), where)

    def _too_few(self, idx: dict[str, np.ndarray]) -> None:
        """An error naming the file, the usable row count and the split sizes when a part is empty
        (its metrics would be undefined, and an empty training split trains nothing)."""
        empty = [k for k in ("train", "val", "test") if len(idx[k]) == 0]
        if not empty:
            return
        n = len(self.items)
        sizes = ", ".join(f"{k} {len(idx[k])}" for k in ("train", "val", "test"))
        if self.split == "random":
            need = "the random split (80/10/10, rounded down) needs at least 10 usable rows"
        elif self.split == "column":
            need = (f"column {self.split_column!r} needs train and test rows, and val rows or enough train rows "
                    f"for val_fraction={self.val_fraction} to draw at least one")
        else:
            need = "use more molecules"
        raise ValueError(f"{self.csv_path}: too few rows for split={self.split!r}: {n} usable (of {self.rows} in the "
                         f"file) give {sizes}; every part needs at least one molecule, and {need}")

    def _split(self) -> dict[str, np.ndarray]:
        n = len(self.items)
        if self.split == "random":
            return random_split(n, self.split_seed)
        if self.split in ("scaffold", "scaffold_random"):
            try:
                return scaffold_split([it["smiles"] for it in self.items],
                                      seed=self.split_seed if self.split == "scaffold_random" else None)
            except ValueError as e:
                raise ValueError(f"{self.csv_path}: {e}") from None
        values = np.array([it["split_value"] for it in self.items])
        values = np.where(values == "valid", "val", values)
        bad = sorted(str(v) for v in set(values) - {"train", "val", "test"})
        if bad:
            raise ValueError(f"{self.csv_path}: column {self.split_column!r} has values {bad}; "
                             "expected train, val (or valid) and test")
        idx = {k: np.flatnonzero(values == k) for k in ("train", "val", "test")}
        if len(idx["val"]) == 0:
            perm = np.random.default_rng(self.split_seed).permutation(idx["train"])
            n_val = int(self.val_fraction * len(perm))
            idx["train"], idx["val"] = np.sort(perm[: len(perm) - n_val]), np.sort(perm[len(perm) - n_val :])
        return idx

    def setup(self, stage: str | None = None) -> None:
        if self.items is None:
            self._load()
            idx = self._split()
            self._too_few(idx)
            self.splits = {k: [self.items[i] for i in v] for k, v in idx.items()}
            if self.descriptors:
                self.scaler = DescriptorScaler().fit_items(self.splits["train"])
                self.scaler.standardize(self.items)
            log.info("%s: %s molecules", self.csv_path, {k: len(v) for k, v in self.splits.items()})
            self._check_duplicates()
        if stage == "predict" and self.predict_csv is not None and self.predict_items is None:
            self._load_predict()

    def _load_predict(self) -> None:
        table = self._read(self.predict_csv, labelled=False)
        items, invalid = table.items, table.skipped
        if self.descriptors:
            self.scaler.standardize(items)
        if invalid:
            log.warning("%s: %d of %d SMILES could not be predicted (%s%s); all of them go to invalid_rows.csv "
                        "beside the predictions", self.predict_csv, len(invalid), table.rows,
                        "; ".join(f"line {s['line']} {_short(s['smiles'])}: {_short(s['reason'], 80)}"
                                  for s in invalid[:SHOWN_SKIPPED]), "; ..." if len(invalid) > SHOWN_SKIPPED else "")
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
        """The graphs' distance clipping and eigenvector count and the atom featurizer's widths
        are the graph encoder's (its tables are sized by them); the descriptor count (with
        ``descriptors``) is the head's ``extra_features``, the target columns' or classes' count
        its ``num_outputs``: each given once, at the data."""
        return [*graph_links(), *atom_links(solvation=True),
                ModelLink("descriptor count", ("descriptors",), "head", "extra_features", descriptor_count),
                ModelLink("output count", ("target_columns", "label_column", "classes"), "head", "num_outputs",
                          output_count)]

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


__all__ = ["MoleculeDataModule", "random_split", "rmse", "scaffold_split"]
