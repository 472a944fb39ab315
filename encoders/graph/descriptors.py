"""Molecule-level RDKit 2-D descriptors for SequenceHead(extra_features=...) (Chemprop's rdkit_2d
feature generator), and their standardisation with the training split's statistics."""

from __future__ import annotations

import warnings

import numpy as np
import torch
from rdkit.Chem import Descriptors
from torch import Tensor

# RDKit's 2-D descriptors, in the order ``molecule_descriptors`` returns them (217 with RDKit
# 2026.09): fixed for the process, so the molecule data's links read their count (the head's
# ``extra_features``) when a config is parsed, before any molecule is read
DESCRIPTOR_NAMES: tuple[str, ...] = tuple(name for name, _ in Descriptors._descList)


def molecule_descriptors(mol) -> np.ndarray:
    """RDKit's 2-D descriptors of one molecule, (F,) float64 in ``DESCRIPTOR_NAMES`` order;
    failures and infinities are NaN (``DescriptorScaler`` standardizes with training statistics
    and fills NaN with the mean)."""
    vals = Descriptors.CalcMolDescriptors(mol, missingVal=float("nan"), silent=True)
    out = np.array([vals[name] for name in DESCRIPTOR_NAMES], dtype=np.float64)
    out[~np.isfinite(out)] = np.nan
    return out


class DescriptorScaler:
    """Standardizes raw descriptors with the training split's per-descriptor mean and std.

    A descriptor NaN in every training molecule gets mean 0, one that does not vary std 1
    (its z-score stays 0 instead of dividing by 0). A NaN in a molecule (a descriptor RDKit
    could not compute) becomes 0, the training mean; z-scores are clipped to +-``clip`` so that
    one huge value (e.g. ``Ipc``) cannot dominate the input.

    Args:
        clip: the largest absolute z-score kept.

    Shapes:
        fit: (n, F) float64 raw descriptors of the training split; transform: (F,) -> (F,) float32;
        items: ``raw_desc`` (F,) float64 -> ``features`` (F,) float32.
    """

    def __init__(self, clip: float = 5.0) -> None:
        self.clip = clip
        self.mean: np.ndarray | None = None  # (F,) float64
        self.std: np.ndarray | None = None  # (F,) float64

    @property
    def dim(self) -> int:
        """F, the number of descriptors (0 before ``fit``)."""
        return 0 if self.mean is None else len(self.mean)

    def fit(self, train: np.ndarray) -> DescriptorScaler:
        if train.ndim != 2 or not len(train):
            raise ValueError(f"DescriptorScaler.fit needs (n, F) descriptors of n >= 1 training molecules, "
                             f"got shape {train.shape}")
        with warnings.catch_warnings():  # an all-NaN column warns "Mean of empty slice": handled here
            warnings.simplefilter("ignore", RuntimeWarning)
            self.mean = np.nan_to_num(np.nanmean(train, 0))
            std = np.nan_to_num(np.nanstd(train, 0))
        self.std = np.where(std > 0, std, 1.0)
        return self

    def fit_items(self, items: list[dict]) -> DescriptorScaler:
        """``fit`` on batch items' raw descriptors (``item["raw_desc"]``, the training split's)."""
        return self.fit(np.stack([it["raw_desc"] for it in items]))

    def standardize(self, items: list[dict]) -> None:
        """Each item's ``features``: its raw descriptors standardized (``transform``)."""
        for it in items:
            it["features"] = self.transform(it["raw_desc"])

    def transform(self, raw: np.ndarray) -> Tensor:
        if self.mean is None:
            raise ValueError("DescriptorScaler.transform before fit: fit it on the training split first")
        z = (raw - self.mean) / self.std
        return torch.from_numpy(np.clip(np.nan_to_num(z, nan=0.0), -self.clip, self.clip)).float()
