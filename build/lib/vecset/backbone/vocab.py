"""Vocabulary: tokens <-> ids, built from training data, saved as plain data.

Shared by text encoders (input tokens) and seq2seq heads (output tokens). Heads never import
encoders nor the reverse, so it lives in the one package below both; it is written once here
rather than once per side. A vocabulary is stored with the model as a uint8 tensor of its
UTF-8 tokens joined by NUL (a buffer in the state dict: plain data, loadable with
``torch.load(weights_only=True)``), never as a pickle.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal

import torch
from torch import Tensor

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS = (PAD, UNK, BOS, EOS)
Level = Literal["char", "word"]


def tokenize(text: str, level: Level) -> list[str]:
    """Characters (``char``) or whitespace-separated words (``word``)."""
    if level == "char":
        return list(text)
    if level == "word":
        return text.split()
    raise ValueError(f"tokenization level must be 'char' or 'word', got {level!r}")


class Vocabulary:
    """Specials first (``<pad>``=0, ``<unk>``=1, ``<bos>``=2, ``<eos>``=3), then the
    training tokens by decreasing count (ties alphabetical, so the order is reproducible).
    """

    def __init__(self, tokens: list[str]) -> None:
        if list(tokens[: len(SPECIALS)]) != list(SPECIALS):
            raise ValueError(f"a vocabulary starts with {SPECIALS}, got {tokens[:4]}")
        if len(set(tokens)) != len(tokens):
            dup = [t for t, c in Counter(tokens).items() if c > 1]
            raise ValueError(f"duplicate vocabulary tokens: {dup[:5]}")
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.pad, self.unk, self.bos, self.eos = (self.index[s] for s in SPECIALS)

    @classmethod
    def build(cls, sequences: Iterable[list[str]], min_count: int = 1) -> Vocabulary:
        counts = Counter(t for seq in sequences for t in seq)
        for s in SPECIALS:
            counts.pop(s, None)
        kept = sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))
        if not kept:
            raise ValueError("cannot build a vocabulary: the training data has no tokens")
        return cls(list(SPECIALS) + kept)

    def __len__(self) -> int:
        return len(self.tokens)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.tokens == other.tokens

    def encode(self, tokens: list[str]) -> tuple[list[int], list[str]]:
        """ids (unknown tokens -> ``<unk>``) and the list of unknown tokens met."""
        ids, unknown = [], []
        for t in tokens:
            i = self.index.get(t)
            if i is None:
                unknown.append(t)
                i = self.unk
            ids.append(i)
        return ids, unknown

    def decode(self, ids: Iterable[int], strip: bool = True) -> list[str]:
        """Tokens up to the first ``<eos>`` (specials dropped when ``strip``)."""
        out = []
        for i in ids:
            i = int(i)
            if strip and i == self.eos:
                break
            if strip and i in (self.pad, self.bos):
                continue
            out.append(self.tokens[i])
        return out

    # -- plain-data storage ---------------------------------------------------------------
    def to_tensor(self) -> Tensor:
        for t in self.tokens:
            if "\x00" in t:
                raise ValueError(f"token {t!r} contains NUL, which the stored vocabulary uses as separator")
        return torch.tensor(list("\x00".join(self.tokens).encode("utf-8")), dtype=torch.uint8)

    @classmethod
    def from_tensor(cls, t: Tensor) -> Vocabulary:
        return cls(bytes(t.to(torch.uint8).tolist()).decode("utf-8").split("\x00"))


def saved_vocabulary(saved: Tensor | None, current: Vocabulary | None, role: str) -> Vocabulary | None:
    """From a module's ``_load_from_state_dict``: the vocabulary a checkpoint saved (``saved``,
    the ``vocab_bytes`` buffer) when the module has none yet, so that it can build its
    embeddings before the weights load; None when nothing was saved or it is ``current``.
    A checkpoint whose ``role`` ("input", "output") vocabulary differs is a ValueError: the
    model only knows its own tokens."""
    if saved is None or not saved.numel():
        return None
    vocab = Vocabulary.from_tensor(saved)
    if current is None:
        return vocab
    if vocab != current:
        raise ValueError(
            f"the checkpoint's {role} vocabulary ({len(vocab)} tokens) differs from the one "
            f"built from this data ({len(current)} tokens); the model only knows its own"
        )
    return None
