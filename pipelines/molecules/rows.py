"""The rows a molecule data module reports: how a skipped or duplicated row is shown on the
console, and the duplicates check (canonical SMILES shared between splits, or in several rows
with different targets: warned, counted and listed, not dropped)."""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

SHOWN = 3  # rows named on the console; all of them go to a CSV in the run directory


def short(text: str, width: int = 60) -> str:
    """``text`` quoted, cut to ``width`` characters (a SMILES of 300 characters fills a line)."""
    return repr(text) if len(text) <= width else repr(text[: width - 3] + "...")


def find_duplicates(splits: dict[str, list[dict]], class_names: list[str] | None, where: Path,
                    ) -> tuple[dict[str, list[str]], dict[str, int], list[dict]]:
    """Warn about the evaluation molecules (of ``splits``, the file ``where``'s) that are also in
    the training split, and the molecules with rows of different targets: the canonical SMILES
    of each split, the counts (``test in train``, ``val in train``, ``different targets``) and
    the rows involved (for ``duplicates.csv``)."""
    # each item's canonical SMILES is the reader's (from its one parse of the molecule)
    keys = {k: [it["canonical_smiles"] for it in v] for k, v in splits.items()}
    split_of = {it["id"]: k for k, v in splits.items() for it in v}
    rows_of: dict[str, list[dict]] = {}
    for it in sorted((it for v in splits.values() for it in v), key=lambda it: it["id"]):
        rows_of.setdefault(it["canonical_smiles"], []).append(it)

    def target(it: dict) -> str:
        y = it["y"]
        return class_names[int(y)] if class_names is not None else " ".join(f"{v:g}" for v in y.tolist())

    def lines(key: str, split: str) -> str:
        found = [str(it["line"]) for it in rows_of[key] if split_of[it["id"]] == split]
        return f"line{'s' if len(found) > 1 else ''} {', '.join(found)}"

    def row(check: str, it: dict) -> dict:
        return {"check": check, "smiles": it["canonical_smiles"], "line": it["line"], "split": split_of[it["id"]],
                "target": target(it)}

    listed: list[dict] = []
    counts: dict[str, int] = {}
    train = set(keys["train"])
    for k in ("test", "val"):
        shared = sorted(set(keys[k]) & train)
        counts[f"{k} in train"] = len(shared)
        if not shared:
            continue
        listed += [row(f"{k} in train", it) for key in shared for it in rows_of[key]
                   if split_of[it["id"]] in (k, "train")]
        shown = "; ".join(f"{short(key, 40)} ({k} {lines(key, k)}, train {lines(key, 'train')})"
                          for key in shared[:SHOWN])
        log.warning("%s: %d of %d %s molecules are also in the training split (same canonical SMILES: their "
                    "scores are not on unseen molecules): %s%s", where, len(shared),
                    len(set(keys[k])), k, shown,
                    "; ..." if len(shared) > SHOWN else "")
    conflicts = [key for key, its in rows_of.items() if len({target(it) for it in its}) > 1]
    counts["different targets"] = len(conflicts)
    if conflicts:
        listed += [row("different targets", it) for key in conflicts for it in rows_of[key]]
        shown = "; ".join(f"{short(key, 40)}: " + ", ".join(f"line {it['line']} {target(it)}" for it in rows_of[key])
                          for key in conflicts[:SHOWN])
        log.warning("%s: %d molecules are in several rows with different targets (same canonical SMILES): "
                    "%s%s", where, len(conflicts), shown, "; ..." if len(conflicts) > SHOWN else "")
    return keys, counts, listed


__all__ = ["SHOWN", "find_duplicates", "short"]
