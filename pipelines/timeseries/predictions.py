"""``vecset predict`` on series: a CSV row per series file."""

from __future__ import annotations

from vecset.pipelines.predict.rows import Rows


class SeriesRows(Rows):
    """One row per series: its file, its label where known (the test split's; empty for
    ``predict_files``), the predicted class and its probability."""

    def rows_of(self, ids: list[int], preds: dict) -> list[dict]:
        names = self.data.class_names
        return [{"file": self.data.describe(sid), "label": self.data.label_of(sid) or "",
                 "prediction": names[lab], "probability": round(p, 6)}
                for sid, lab, p in zip(ids, preds["label"], preds["prob"], strict=True)]
