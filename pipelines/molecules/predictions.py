"""``vecset predict`` on molecules: a CSV row per molecule, its invalid rows apart."""

from __future__ import annotations

from pathlib import Path

from vecset.pipelines.predict.rows import Rows, write_csv


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
