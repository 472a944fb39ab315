"""``vecset predict`` on one graph: a CSV row per node."""

from __future__ import annotations

from vecset.pipelines.predict.rows import Rows


class NodeRows(Rows):
    """One row per node of the one graph: its predicted class, probability and split."""

    def rows_of(self, ids: list[int], preds: dict) -> list[dict]:
        split_of = {n: k for k, v in self.data.split_nodes.items() for n in v}
        return [{"node": n, "split": split_of[n], "prediction": self.data.class_names[lab], "probability": round(p, 6)}
                for labels, probs in zip(preds["label"], preds["prob"], strict=True)
                for n, lab, p in zip(self.data.nodes, labels, probs, strict=True)]
