"""Test items seen in training elsewhere: the leakage check of a multi-task run (issue #31).

For every task, its test items are looked up in every task's training split, compared by what
the data module says identifies an item (``VecsetDataModule.item_keys``: canonical SMILES for
molecules; a data module that gives none is not checked), and in named extra sets (the
pretraining molecules: structure without any label). A test item of task A in the training
split of task B that has another label (FreeSolv's molecule among solubility's) is structure with
another target: counted and reported. In the training split of another task with A's own label
(``label_key``: the same file and target columns, e.g. one CSV listed twice with two splits), A's
test target would be trained on: a ``LabelLeakError``. A's test items in A's own training split
are the data's own duplicates (the published solubility split has 4 molecules whose SMILES appear
on both sides, stereoisomers written without stereo): counted under ``own train`` and warned
about, not refused, since a single-task run on that split has them too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

from vecset.pipelines.data.base import VecsetDataModule

log = logging.getLogger(__name__)

SHOWN = 3  # keys named in a message


class LabelLeakError(ValueError):
    """A task's test item is in the training split of a task with the same label."""


def overlap_with_test(tasks: Mapping[str, VecsetDataModule],
                      extra: Mapping[str, Iterable[str]] | None = None) -> dict[str, dict[str, int]]:
    """Per task (set up; those whose data gives ``item_keys``): ``{"test": distinct test items,
    "own train": of them in its own training split, "<B> train": in task B's training split,
    "<name>": in the extra set <name>}``. A ``LabelLeakError`` names the tasks and a few items
    when a test item is in another task's training split with the same ``label_key``."""
    keyed = {t: dm for t, dm in tasks.items() if dm.item_keys("test") is not None}
    train = {t: set(dm.item_keys("train")) for t, dm in keyed.items()}
    out: dict[str, dict[str, int]] = {}
    for a, dm in keyed.items():
        test = set(dm.item_keys("test"))
        row = {"test": len(test)}
        for b, other in keyed.items():
            shared = test & train[b]
            if b == a:
                row["own train"] = len(shared)
                if shared:
                    log.warning("%s: %d test items are also in its own training split (%s%s): duplicates in the "
                                "data's split", a, len(shared), ", ".join(sorted(shared)[:SHOWN]),
                                ", ..." if len(shared) > SHOWN else "")
            elif shared and other.label_key() == dm.label_key():
                raise LabelLeakError(
                    f"task {a!r}: {len(shared)} of its test items are in the training split of task {b!r}, which "
                    f"has the same label ({dm.label_key()}): their test targets would be trained on (e.g. "
                    f"{', '.join(sorted(shared)[:SHOWN])}); give the two tasks the same split or drop one")
            else:
                row[f"{b} train"] = len(shared)
        for name, keys in (extra or {}).items():
            row[name] = len(test & set(keys))
        out[a] = row
    return out


def note_pretraining_overlap(data: VecsetDataModule, pretrained_on: str) -> int | None:
    """Warn when test items of ``data`` (set up) are in the data a warm-started model was
    pretrained on (``pretrained_on``, a file of ``data``'s kind: its ``item_keys_of``): their
    structure, not their targets, was seen before the test. The count, or None where it cannot
    be checked (the data gives no keys, or the file is not here: said at info level)."""
    test = data.item_keys("test")
    if test is None:
        return None
    if not Path(pretrained_on).exists():
        log.info("the warm start's model was pretrained on %s, which is not here: its overlap with the test "
                 "items is not checked", pretrained_on)
        return None
    seen = data.item_keys_of(pretrained_on)
    if seen is None:
        return None
    shared = sorted(set(test) & set(seen))
    if shared:
        log.warning("%d of %d test items are in the data the warm start's model was pretrained on (%s; their "
                    "structure, not their targets, was seen before the test): %s%s", len(shared), len(set(test)),
                    pretrained_on, ", ".join(shared[:SHOWN]), ", ..." if len(shared) > SHOWN else "")
    return len(shared)


__all__ = ["LabelLeakError", "note_pretraining_overlap", "overlap_with_test"]
