"""MoleculeDataModule's option groups (config sections under ``data.init_args``): how the rows are
split, and how each molecule is featurized. The device group is the shared ``BucketedPlacement``
(``data/options.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vecset.encoders.graph import MoleculeFeaturizer

SplitMethod = Literal["random", "scaffold", "scaffold_random", "column"]


@dataclass(frozen=True)
class MoleculeSplit:
    """How the rows are split into train, validation and test (``molecules/splits.py``).

    Args:
        method: ``random`` (``default_rng(seed).permutation(n)``: first 80% train, next 10%
            validation, the rest test), ``scaffold`` (Bemis-Murcko scaffold groups, largest first,
            as DeepChem's ScaffoldSplitter), ``scaffold_random`` (whole scaffold groups in the seed's
            random order, big ones first: Chemprop's balanced scaffold split) or ``column`` (a column
            of the file with train/val/test).
        seed: seed of the random split (and of the validation draw for ``column``).
        column: the column for ``column`` (values train / val (or valid) / test).
        val_fraction: with ``column``, the share of the train rows held out when it has no val rows.
    """

    method: SplitMethod = "random"
    seed: int = 0
    column: str = "split"
    val_fraction: float = 0.1

    def __post_init__(self) -> None:
        if self.method not in ("random", "scaffold", "scaffold_random", "column"):
            raise ValueError(f"split.method must be 'random', 'scaffold', 'scaffold_random' or 'column', "
                             f"got {self.method!r}")


@dataclass(frozen=True)
class MoleculeFeatures:
    """How each molecule becomes a graph (``encoders/graph``'s ``MoleculeFeaturizer``); the widths
    and tables that follow are the graph encoder's and the head's (linked values).

    Args:
        max_atoms: molecules with more heavy atoms are skipped and reported.
        max_dist: shortest-path distances are clipped here (the encoder's ``max_dist``).
        lap_pe_k: Laplacian eigenvectors per graph (the encoder's ``lap_pe_k``).
        descriptors: add standardized RDKit 2-D descriptors as ``batch["features"]`` (their
            number, 217 with RDKit 2026.09, is the head's ``extra_features``).
        geometry: also embed one 3-D conformer per molecule (RDKit ETKDG with a fixed seed, then
            MMFF where it converges); the graph encoder then adds its distance bias
            (``geometry: distance_gaussian``, linked: given here once). Molecules that cannot be
            embedded keep their 2-D graph and are counted in the log.
        charges: one more atom feature, the Gasteiger partial charge with the atom's hydrogens'
            (``encoders/graph/solvation.py``); atoms RDKit has no charge for get 0, counted.
        surface: two more, the atom's solvent-accessible surface (FreeSASA on the conformer, A^2 /
            100) and a "no surface" flag where there is no conformer; needs ``geometry``. The
            encoder's ``node_dim`` follows ``charges`` and ``surface`` (linked).
        conformers: with ``geometry``, conformers embedded per molecule (Uni-Mol style
            augmentation): k > 1 embeds k and each training draw takes one at random (seeded:
            ``molecules/conformers.py``), while validation, test and predict take conformer 0.
        physics: one more vector per molecule, a token of physics descriptors: the
            generalized-Born polarization energy and the solvent-accessible surface of conformer
            0, Crippen logP, TPSA, H-bond donors and acceptors, rotatable bonds
            (``encoders/graph/physics.py``); needs ``geometry``. The encoder's ``physics_token``
            follows (linked).
    """

    max_atoms: int = 100
    max_dist: int = 8
    lap_pe_k: int = 0
    descriptors: bool = False
    geometry: bool = False
    charges: bool = False
    surface: bool = False
    conformers: int = 1
    physics: bool = False

    def __post_init__(self) -> None:
        if self.surface and not self.geometry:
            raise ValueError("features.surface: true needs features.geometry: true (the solvent-accessible surface "
                             "is measured on the 3-D conformer)")
        if self.physics and not self.geometry:
            raise ValueError("features.physics: true needs features.geometry: true (its generalized-Born energy and "
                             "surface are measured on the 3-D conformer)")
        if isinstance(self.conformers, int) and self.conformers > 1 and not self.geometry:
            raise ValueError(f"features.conformers: {self.conformers} needs features.geometry: true (the conformers "
                             "are 3-D embeddings)")

    def featurizer(self) -> MoleculeFeaturizer:
        return MoleculeFeaturizer(self.max_atoms, self.max_dist, self.lap_pe_k, self.descriptors, self.geometry,
                                  self.charges, self.surface, self.conformers, self.physics)


__all__ = ["MoleculeFeatures", "MoleculeSplit", "SplitMethod"]
