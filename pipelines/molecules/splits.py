"""How a molecule CSV's rows are split into train, validation and test (``MoleculeSplit``).

``random``: ``numpy.random.default_rng(seed).permutation(n)``, first 80% train, next 10%
validation, the rest test (the FreeSolv benchmark splits for seeds 0..4); ``scaffold``: Bemis &
Murcko 1996 scaffold groups, largest first, to train, then validation, then test (DeepChem's
ScaffoldSplitter); ``scaffold_random``: whole scaffold groups in the seed's random order, big ones
first (Chemprop's balanced scaffold split); ``column``: a column of the file with train/val/test
(without val rows, ``val_fraction`` of the train rows, drawn with the seed, validate).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vecset.encoders.graph import scaffold_groups
from vecset.pipelines.molecules.options import MoleculeSplit


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


def split_rows(split: MoleculeSplit, items: list[dict], where: Path) -> dict[str, np.ndarray]:
    """The item indices of each part, by ``split.method``; an error naming ``where`` (the file)
    for a scaffold split with an empty part or a split column with other values."""
    n = len(items)
    if split.method == "random":
        return random_split(n, split.seed)
    if split.method in ("scaffold", "scaffold_random"):
        try:
            return scaffold_split([it["smiles"] for it in items],
                                  seed=split.seed if split.method == "scaffold_random" else None)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    values = np.array([it["split_value"] for it in items])
    values = np.where(values == "valid", "val", values)
    bad = sorted(str(v) for v in set(values) - {"train", "val", "test"})
    if bad:
        raise ValueError(f"{where}: column {split.column!r} has values {bad}; expected train, val (or valid) and test")
    idx = {k: np.flatnonzero(values == k) for k in ("train", "val", "test")}
    if len(idx["val"]) == 0:
        perm = np.random.default_rng(split.seed).permutation(idx["train"])
        n_val = int(split.val_fraction * len(perm))
        idx["train"], idx["val"] = np.sort(perm[: len(perm) - n_val]), np.sort(perm[len(perm) - n_val :])
    return idx


def check_sizes(idx: dict[str, np.ndarray], split: MoleculeSplit, rows: int, where: Path) -> None:
    """An error naming the file, the usable row count and the split sizes when a part is empty
    (its metrics would be undefined, and an empty training split trains nothing)."""
    empty = [k for k in ("train", "val", "test") if len(idx[k]) == 0]
    if not empty:
        return
    n = sum(len(v) for v in idx.values())
    sizes = ", ".join(f"{k} {len(idx[k])}" for k in ("train", "val", "test"))
    if split.method == "random":
        need = "the random split (80/10/10, rounded down) needs at least 10 usable rows"
    elif split.method == "column":
        need = (f"column {split.column!r} needs train and test rows, and val rows or enough train rows "
                f"for val_fraction={split.val_fraction} to draw at least one")
    else:
        need = "use more molecules"
    raise ValueError(f"{where}: too few rows for split.method={split.method!r}: {n} usable (of {rows} in the file) "
                     f"give {sizes}; every part needs at least one molecule, and {need}")


__all__ = ["check_sizes", "random_split", "scaffold_split", "split_rows"]
