"""Predictions as CSV rows, one per input: ``predictions.csv`` in the run directory.

``Rows`` writes any task's: the input (the data module's ``describe``), then the predicted
class and its probability (a label per vector: space-separated), or a value per target (the
data's ``target_names``). A job's own rows (molecules, graph nodes, pronunciations) subclass it
in the job's folder.
"""

from __future__ import annotations

import csv
from pathlib import Path

from vecset.pipelines.predict.output import PredictionOutput


def write_csv(rows: list[dict], path: Path, fieldnames: list[str] | None = None) -> Path:
    """``rows`` to ``path`` (its folder made), the first row's keys as the header unless given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fieldnames or (list(rows[0].keys()) if rows else ["input"]))
        w.writeheader()
        w.writerows(rows)
    return path


class Rows(PredictionOutput):
    """A row per sample, written at the end.

    Args:
        data: the task's data module (``describe``, ``class_names``, ``target_names``).
        out_dir: the run directory.
    """

    def __init__(self, data, out_dir: Path) -> None:
        self.data, self.out_dir = data, Path(out_dir)
        self.rows: list[dict] = []

    def rows_of(self, ids: list[int], preds: dict) -> list[dict]:
        names = self.data.class_names
        targets = self.data.target_names
        rows = []
        for i, sid in enumerate(ids):
            row = {"input": self.data.describe(sid)}
            if "label" in preds:
                lab = preds["label"][i]
                if isinstance(lab, list):  # one label per vector
                    row["prediction"] = " ".join(names[j] if names else str(j) for j in lab)
                    row["probability"] = " ".join(f"{p:.3f}" for p in preds["prob"][i])
                else:
                    row["prediction"] = names[lab] if names else lab
                    row["probability"] = round(preds["prob"][i], 6)
            else:
                for t, v in enumerate(preds["value"][i]):
                    row[targets[t] if targets else f"value_{t}"] = v
            rows.append(row)
        return rows

    def add(self, ids: list[int], preds: dict, batch: dict) -> None:
        self.rows += self.rows_of(ids, preds)

    def close(self) -> Path:
        return write_csv(self.rows, self.out_dir / "predictions.csv")
