"""MoleculePretrainDataModule: a CSV of SMILES without labels -> masked graph batches with the
targets of self-supervised pretraining (``heads/pretext.py``'s PretextHead).

Each molecule is featurized once (``encoders/graph``'s reader, with RDKit 2-D descriptors; the
featurized molecules are cached on disk like the labelled sets': ``encoders/graph/cache.py``);
the descriptors are standardized with the training part's statistics (``DescriptorScaler``) and
become the target ``desc_target``, never an input. Every batch masks ``mask_rate`` of each
molecule's atoms (``encoders.graph.masking.mask_atoms``): new masks every training epoch (drawn
from ``split_seed``), the same masks every validation pass (drawn from each batch's ids).
A large corpus (the 1.58 M SMILES of MOSES's training set) is featurized ``chunk_size`` rows at a
time, each chunk its own cache file (``read_in_chunks``): a featurization that is stopped goes on,
the next time, at the first chunk not in the cache. Training resumes from ``--ckpt_path last``
(with ``StepCheckpoint`` for a step inside an epoch: ``docs/molecules.md``).
Split: ``val_fraction`` of the molecules, drawn with ``split_seed``, validate; the rest train;
test is the validation part (pretraining has no held-out task of its own: the downstream sets'
validation splits choose the settings, ``docs/molecules.md``).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader

from vecset.contracts.data_spec import DataSpec
from vecset.encoders.files import read_csv_rows
from vecset.encoders.graph import (
    DESCRIPTOR_NAMES,
    DescriptorScaler,
    FeatureCache,
    InvalidMolecule,
    MoleculeFeaturizer,
    MoleculeTable,
    featurize_smiles,
    read_molecule_csv,
)
from vecset.encoders.graph.masking import element_slots, mask_atoms
from vecset.pipelines.console import track
from vecset.pipelines.data.base import ModelLink, VecsetDataModule, fixed
from vecset.pipelines.molecules.links import atom_links, graph_links
from vecset.shipped import data_file

log = logging.getLogger(__name__)


@functools.cache
def element_count() -> int:
    """The element classes of masked-atom prediction (12 elements and "other"), asked once."""
    return len(element_slots(MoleculeFeaturizer().nodes)[1])


def read_in_chunks(path: Path, featurizer: MoleculeFeaturizer, smiles_column: str, chunk_size: int,
                   cache: FeatureCache | None = None, progress=None) -> MoleculeTable:
    """``read_molecule_csv``'s table of an unlabelled file (the same items, ids, lines and skipped
    rows), featurized ``chunk_size`` rows at a time: each chunk is its own cache file, so a
    featurization stopped after k chunks reads those k from the cache when it starts again."""
    df, lines = read_csv_rows(path)
    if smiles_column not in df.columns:
        raise ValueError(f"{path}: column(s) {[smiles_column]} not in the file; its columns are {list(df.columns)}")
    smiles = [s.strip() for s in df[smiles_column]]
    table = MoleculeTable(Path(path), rows=len(df))
    chunks = range(0, len(smiles), chunk_size)
    for k, start in enumerate(chunks):
        part = smiles[start : start + chunk_size]
        molecules = featurize_smiles(part, featurizer, cache, progress, source=f"{Path(path).name} chunk {k + 1}/{len(chunks)}")
        for row in range(start, start + len(part)):
            m = molecules[smiles[row]]
            if isinstance(m, InvalidMolecule):
                table.skipped.append({"line": lines[row], "smiles": smiles[row], "reason": m.reason})
            else:
                table.items.append(m.item(id=row, line=lines[row]))
    return table


class MaskedCollate:
    """``pad_graphs`` (through the featurizer), then ``mask_atoms``, plus ``desc_target`` (B, F_d).
    ``fixed``: the masks of a batch depend on its ids only (validation), else on a generator
    that advances from ``seed`` (training)."""

    def __init__(self, featurizer: MoleculeFeaturizer, rate: float, hide_bonds: bool, seed: int,
                 fixed: bool) -> None:
        self.featurizer, self.rate, self.hide_bonds, self.fixed = featurizer, rate, hide_bonds, fixed
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, items: list[dict]) -> dict:
        batch = self.featurizer.collate(items)
        gen = torch.Generator().manual_seed(int(batch["ids"].sum()) * 7919 + 1) if self.fixed else self.generator
        batch = mask_atoms(batch, self.rate, gen, self.featurizer.nodes, self.hide_bonds)
        batch["desc_target"] = torch.stack([it["desc_target"] for it in items])
        return batch


class MoleculePretrainDataModule(VecsetDataModule):
    """Unlabelled molecules for pretraining the graph encoder and backbone.

    Args:
        csv_path: a CSV with a SMILES column (``data/molecules/moses_10k.csv``).
        smiles_column: its name.
        val_fraction: share of the molecules that validate (drawn with ``split_seed``).
        split_seed: seed of that draw and of the training masks.
        mask_rate: share of each molecule's atoms masked (at least one).
        hide_bonds: also hide the bond types of the masked atoms' bonds.
        max_atoms, max_dist, lap_pe_k: as ``MoleculeDataModule``'s (give the fine-tuning run the same).
        batch_size, num_workers: the loaders'.
        cache, cache_dir: the feature cache (``MoleculeDataModule``'s).
        chunk_size: featurize (and cache) this many rows at a time (``read_in_chunks``: resumable);
            None: the whole file as one (the shipped 10 k set's cache file).

    Batches: ``pad_graphs``'s, with ``x`` and ``edge`` masked, ``atom_target`` (B, N) long
    (-100 where not masked) and ``desc_target`` (B, F_d) float.
    """

    def __init__(self, csv_path: str, smiles_column: str = "smiles", val_fraction: float = 0.05,
                 split_seed: int = 0, mask_rate: float = 0.15, hide_bonds: bool = True, max_atoms: int = 100,
                 max_dist: int = 8, lap_pe_k: int = 0, batch_size: int = 64, num_workers: int = 0,
                 cache: bool = True, cache_dir: str | None = None, chunk_size: int | None = None) -> None:
        super().__init__()
        if not 0 < val_fraction < 1:
            raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
        if chunk_size is not None and (isinstance(chunk_size, bool) or chunk_size < 1):
            raise ValueError(f"chunk_size must be a whole number of rows >= 1 (or null: one chunk), got {chunk_size!r}")
        self.chunk_size = chunk_size
        self.csv_path, self.smiles_column = data_file(csv_path, "csv_path"), smiles_column
        self.val_fraction, self.split_seed = val_fraction, split_seed
        self.mask_rate, self.hide_bonds = mask_rate, hide_bonds
        self.batch_size, self.num_workers = batch_size, num_workers
        self.featurizer = MoleculeFeaturizer(max_atoms, max_dist, lap_pe_k, descriptors=True)
        self.cache = FeatureCache(cache_dir) if cache else None
        self.atom_classes = element_slots(self.featurizer.nodes)[1]
        self.splits: dict[str, list[dict]] = {}
        self.skipped: list[dict] = []
        self.scaler: DescriptorScaler | None = None

    def _progress(self):
        if self.trainer is not None and self.trainer.progress_bar_callback is None:
            return None
        return track

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        if self.chunk_size is None:
            table = read_molecule_csv(self.csv_path, self.featurizer, self.smiles_column, cache=self.cache,
                                      progress=self._progress())
        else:
            table = read_in_chunks(self.csv_path, self.featurizer, self.smiles_column, self.chunk_size, self.cache,
                                   self._progress())
        items, self.skipped = table.items, table.skipped
        if self.skipped:
            log.warning("%s: skipped %d of %d molecules (first: line %s, %s)", self.csv_path, len(self.skipped),
                        table.rows, self.skipped[0]["line"], self.skipped[0]["reason"])
        perm = np.random.default_rng(self.split_seed).permutation(len(items))
        n_val = max(1, int(round(self.val_fraction * len(items))))
        if len(items) - n_val < 1:
            raise ValueError(f"{self.csv_path}: {len(items)} usable molecules, too few to pretrain on")
        self.splits = {"train": [items[i] for i in np.sort(perm[n_val:])],
                       "val": [items[i] for i in np.sort(perm[:n_val])]}
        self.splits["test"] = self.splits["val"]
        self.scaler = DescriptorScaler().fit_items(self.splits["train"])
        for it in items:
            it["desc_target"] = self.scaler.transform(it.pop("raw_desc"))
        log.info("%s: pretraining on %d molecules, validating on %d", self.csv_path, len(self.splits["train"]),
                 len(self.splits["val"]))

    def state_dict(self) -> dict:
        """Saved in every checkpoint of the run: the data pretrained on, so that a fine-tuning run
        warm-started from it notes the test molecules this data holds (``warm_start.pretrained_on``)."""
        return {"pretraining_data": str(self.csv_path)}

    def load_state_dict(self, state_dict: dict) -> None:
        """Nothing to restore: the file is the config's."""

    def _loader(self, split: str, shuffle: bool = False) -> DataLoader:
        collate = MaskedCollate(self.featurizer, self.mask_rate, self.hide_bonds, self.split_seed,
                                fixed=split != "train")
        return DataLoader(self.splits[split], batch_size=self.batch_size, shuffle=shuffle, collate_fn=collate,
                          num_workers=self.num_workers)

    def data_spec(self, stage: str) -> DataSpec:
        """The element classes of masked-atom prediction (``class_names``), how the graphs were
        made (for the encoder), and at fit the standardized descriptors (their count, for the head)."""
        spec = replace(super().data_spec(stage), class_names=self.atom_classes, origin=str(self.csv_path),
                       structure=self.featurizer.structure)
        if spec.fit:
            spec = replace(spec, train_targets=torch.stack([it["desc_target"] for it in self.splits["train"]]))
        return spec

    @classmethod
    def model_links(cls) -> list[ModelLink]:
        """The graphs' distance clipping and eigenvector count and the atom featurizer's widths
        are the graph encoder's (its tables are sized by them), given once, at the data; the
        element classes and the descriptor count are the pretext head's."""
        elements, descriptors = element_count(), len(DESCRIPTOR_NAMES)
        return [*graph_links(), *atom_links(),
                fixed("element class count", "head", "num_atom_types", elements, f"{elements} element classes"),
                fixed("descriptor count", "head", "num_descriptors", descriptors,
                      f"{descriptors} RDKit 2-D descriptors")]

    def default_reports(self) -> list:
        """None: the pretext metrics (val atom_acc, desc_rmse) are the report; the downstream sets judge it."""
        return []


__all__ = ["MaskedCollate", "MoleculePretrainDataModule", "read_in_chunks"]
