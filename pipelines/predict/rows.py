"""Predictions as CSV rows, one per input: ``predictions.csv`` in the run directory.

``Rows`` writes any task's: the input (the data module's ``describe``), then the predicted
class and its probability (a label per vector: space-separated), or a value per target (the
data's ``target_names``). Molecules, graph nodes and pronunciations have rows of their own.
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path

from vecset.pipelines.predict.output import PredictionOutput

log = logging.getLogger(__name__)


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


class MoleculeRows(Rows):
    """Per molecule its CSV line and SMILES, then the predicted class and probability, or each
    target's value (and its std in the target's units when the head or ensemble gives one);
    sorted by line. The predict CSV's rows that were not predicted (invalid SMILES) go to
    ``invalid_rows.csv`` with their reason."""

    def rows_of(self, ids: list[int], preds: dict) -> list[dict]:
        data, rows = self.data, []
        for i, sid in enumerate(ids):
            line, smiles = data.source_row(sid)
            row = {"line": line, "smiles": smiles}
            if data.class_names is not None:
                row.update(prediction=data.class_names[preds["label"][i]], probability=round(preds["prob"][i], 6))
            else:
                row.update({name: float(v) for name, v in zip(data.target_names, preds["value"][i], strict=True)})
                if "std" in preds:
                    row.update({f"{name}_std": float(v)
                                for name, v in zip(data.target_names, preds["std"][i], strict=True)})
            rows.append(row)
        return rows

    def close(self) -> Path:
        path = write_csv(sorted(self.rows, key=lambda r: r["line"]), self.out_dir / "predictions.csv")
        if self.data.invalid_predict:
            bad = write_csv(self.data.invalid_predict, self.out_dir / "invalid_rows.csv", ["line", "smiles", "reason"])
            print(f"{len(self.data.invalid_predict)} rows not predicted (invalid SMILES): {bad}")
        return path


class NodeRows(Rows):
    """One row per node of the one graph: its predicted class, probability and split."""

    def rows_of(self, ids: list[int], preds: dict) -> list[dict]:
        split_of = {n: k for k, v in self.data.split_nodes.items() for n in v}
        return [{"node": n, "split": split_of[n], "prediction": self.data.class_names[lab], "probability": round(p, 6)}
                for labels, probs in zip(preds["label"], preds["prob"], strict=True)
                for n, lab, p in zip(self.data.nodes, labels, probs, strict=True)]


class PronunciationRows(Rows):
    """Per word its predicted pronunciation and whether decoding reached ``<eos>`` (words that
    ran to the decoder's ``max_len`` are counted in a warning)."""

    def rows_of(self, ids: list[int], preds: dict) -> list[dict]:
        return [{"word": self.data.describe(sid), "pronunciation": " ".join(preds["tokens"][i]),
                 "finished": bool(preds["finished"][i])} for i, sid in enumerate(ids)]

    def close(self) -> Path:
        path = write_csv(self.rows, self.out_dir / "predictions.csv", ["word", "pronunciation", "finished"])
        unfinished = sum(not r["finished"] for r in self.rows)
        if unfinished:
            log.warning("%d of %d words reached max_len without <eos> (finished=False in %s)",
                        unfinished, len(self.rows), path)
        return path
