"""``vecset predict`` on words: a CSV row per word with its predicted pronunciation."""

from __future__ import annotations

import logging
from pathlib import Path

from vecset.pipelines.predict.rows import Rows, write_csv

log = logging.getLogger(__name__)


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
