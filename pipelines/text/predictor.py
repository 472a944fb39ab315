"""The grapheme-to-phoneme predictor: words -> ARPAbet pronunciations (``vecset.pretrained("g2p")``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vecset.pipelines.predictor import Predictor


class G2PPredictor(Predictor):
    """Words -> pronunciations (ARPAbet phones, space-separated) and ``finished``: False where
    the decoder reached ``max_len`` phones without ending the word, or where the word has more
    letters than that (beyond what the model was built to spell out: such a word's decoding
    tends to end early, a long word cut to a few phones). A word with a character the training
    dictionary never had (its alphabet: ``alphabet``) is an error row: the model has no
    embedding for it."""

    input_column, input_flag = "word", "--words"
    known_inputs = ["hello", "world", "pronunciation"]
    values = ["pronunciation", "finished"]

    def __init__(self, name: str, path: Path, bundle: dict, card: dict) -> None:
        super().__init__(name, path, bundle, card)
        enc = self.model.encoder
        self.alphabet = "".join(sorted(t for t in enc.vocab.tokens if not (t.startswith("<") and t.endswith(">"))))
        self.max_len: int = self.model.head.max_len

    def prepare(self, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"expected a word (a string), got {type(value).__name__}")
        if not value.strip():
            raise ValueError("empty word")
        if any(c.isspace() for c in value):
            raise ValueError(f"{value!r} holds a space: one word per input")
        enc = self.model.encoder
        outside = sorted({t for t in enc.tokens_of(value) if t not in enc.vocab.index})
        if outside:
            raise ValueError(f"{value!r}: characters outside the alphabet the model was trained on: "
                             f"{''.join(outside)!r} (its alphabet: {self.alphabet!r})")
        return value

    def _score(self, rows: list[dict], targets: list) -> dict:
        """Word error rate (not exactly one of the word's pronunciations) and phone error rate
        against the closest pronunciation (``targets``: each word's list of phone strings)."""
        from vecset.heads.edit_metrics import PhoneErrorRate, WordErrorRate

        preds = [r["pronunciation"].split() for r in rows]
        refs = [[ref.split() for ref in rs] for rs in targets]
        per, wer = PhoneErrorRate(), WordErrorRate()
        per.update(preds, refs)
        wer.update(preds, refs)
        return {"wer": float(wer.compute()), "per": float(per.compute())}

    def run(self, items: list[str]) -> list[dict]:
        from vecset.encoders.text.collate import collate_text

        batch = collate_text([{"text": w, "id": i} for i, w in enumerate(items)])
        preds = self.model.head.predict(self.model(batch), batch)
        return [{"pronunciation": " ".join(t), "finished": bool(f) and len(w) <= self.max_len}
                for w, t, f in zip(items, preds["tokens"], preds["finished"], strict=True)]

    def notes(self, rows: list[dict]) -> list[str]:
        cut = sum(r["finished"] is False for r in rows)
        return [f"{cut} of {len(rows)} words are not finished (finished: False; longer than the {self.max_len} "
                "phones or letters the model spells out: their pronunciation is likely cut short)"] if cut else []

    @classmethod
    def pack_extra(cls, config: dict) -> tuple[dict, dict]:
        """Nothing from the training data (the vocabulary is in the encoder's weights); the test
        split's words, one row per word, with every pronunciation of each."""
        from vecset.pipelines.text.cmudict import CMUDictDataModule

        dm = CMUDictDataModule(**dict(config["data"].get("init_args") or {}))
        dm.setup("fit")
        seen, words, refs = set(), [], []
        for it in dm.splits["test"]:  # one row per word (``pronunciations: all`` repeats a word)
            if it["id"] not in seen:
                seen.add(it["id"])
                words.append(it["text"])
                refs.append(list(it["references"]))
        return {}, {"inputs": words, "targets": refs}


__all__ = ["G2PPredictor"]
