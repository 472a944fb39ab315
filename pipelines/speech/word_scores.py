"""Frame accuracy inside words the training split never says vs words it does.

A test word token is unseen when its case-folded spelling is in none of the training split's
``.wrd`` files. A frame belongs to the word whose ``.wrd`` interval holds its centre (the
frame-centre rule of the phone labels, ``word_frames``); frames in no word (pauses, the
utterance's edges) are a row of their own. Frames without a class (label < 0) count nowhere,
as in the frame accuracy.
"""

from __future__ import annotations

import numpy as np

from vecset.encoders.speech import Word, word_frames


class WordScores:
    """Sums over utterances of word tokens and frames, split by seen / unseen / no word.

    Args:
        train_words: the case-folded training vocabulary.
    """

    ROWS = ("unseen_words", "seen_words", "outside_words")

    def __init__(self, train_words: set[str]) -> None:
        self.train_words = train_words
        self.tokens = self.unseen_tokens = 0
        self.frames = dict.fromkeys(self.ROWS, 0)
        self.correct = dict.fromkeys(self.ROWS, 0)

    def update(self, words: list[Word], sample_rate: int, pred: np.ndarray, y: np.ndarray) -> None:
        """One utterance: its words, predicted and reference frame labels (T,)."""
        unseen = np.array([w.word.casefold() not in self.train_words for w in words] + [False])
        self.tokens += len(words)
        self.unseen_tokens += int(unseen[:-1].sum())
        k = word_frames(words, len(y), sample_rate)  # (T,) word index or -1
        keep = y >= 0
        right = pred == y
        rows = {"unseen_words": (k >= 0) & unseen[k], "seen_words": (k >= 0) & ~unseen[k], "outside_words": k < 0}
        for name, m in rows.items():
            self.frames[name] += int((m & keep).sum())
            self.correct[name] += int((m & keep & right).sum())

    def compute(self) -> dict:
        out: dict = {"test_word_tokens": self.tokens, "unseen_word_tokens": self.unseen_tokens,
                     "share_unseen_word_tokens": round(self.unseen_tokens / self.tokens, 4) if self.tokens else None}
        for name in self.ROWS:
            n = self.frames[name]
            out[f"frames_{name}"] = n
            out[f"frame_accuracy_{name}"] = round(self.correct[name] / n, 4) if n else None
        return out
