"""TextEncoder: strings -> token vectors (characters or whitespace words) -> VectorSet.

The vocabulary is built from the training data at the start of fit (``receive``: the data
module's ``DataSpec.train_texts[field]``, handed over by the Lightning module) and saved with the
model as a uint8 buffer (plain data, see ``backbone.vocab``). Embeddings are either one-hot
vectors (Bengio et al. 2003 contrast them with learned ones: every pair of one-hot
vectors is equally far apart, so the model gets no similarity between tokens for free)
or a learned table (``nn.Embedding``). A positional encoding is added (Vaswani et al. 2017).
"""

from __future__ import annotations

import logging
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vecset.backbone.vocab import Level, Vocabulary, saved_vocabulary, tokenize
from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet
from vecset.encoders.contract import Encoder
from vecset.encoders.vector import Positional1D, make_positional_1d, max_positions

log = logging.getLogger("vecset")
Embedding = Literal["learned", "onehot"]
TOKENS = "tokens"  # the batch key of token ids (B, N) long, read instead of the strings when present
Unknown = Literal["unk", "error"]


class TextEncoder(Encoder):
    """Token embeddings plus a positional encoding.

    Args:
        d_model: vector width D.
        level: ``char`` (each character is a token) or ``word`` (whitespace-separated).
        embedding: ``learned`` (an ``nn.Embedding``) or ``onehot`` (fixed one-hot vectors of
            width D; the vocabulary must fit: V <= D).
        positional: ``sinusoidal`` (any length), ``learned`` (a table of ``max_len``
            positions; a longer input is an error) or ``none``.
        max_len: size of the learned positional table.
        unknown: a token not in the vocabulary is mapped to ``<unk>`` and counted
            (``unk``; see ``unknown_count``) or raises a ValueError (``error``).
        min_count: training tokens seen fewer times become ``<unk>``.
        lowercase: lowercase the text before tokenizing.
        field: the batch key holding the strings (``batch[field]``: a list of B str, or of B
            token lists when the data is already tokenized, e.g. CoNLL-U word forms).

    Shapes:
        batch[field]: B strings -> VectorSet x (B, N, D), mask (B, N) with N the longest
        input in tokens. Or batch["tokens"] (B, N) long ids padded with <pad> (``tokenized``;
        what an exported model reads) -> the same, mask = tokens != <pad>.
    """


    def __init__(self, d_model: int, level: Level = "char", embedding: Embedding = "learned",
                 positional: Positional1D = "sinusoidal", max_len: int | None = None,
                 unknown: Unknown = "unk", min_count: int = 1, lowercase: bool = False,
                 field: str = "text") -> None:
        super().__init__()
        if level not in ("char", "word"):
            raise ValueError(f"level must be 'char' or 'word', got {level!r}")
        if embedding not in ("learned", "onehot"):
            raise ValueError(f"embedding must be 'learned' or 'onehot', got {embedding!r}")
        if unknown not in ("unk", "error"):
            raise ValueError(f"unknown must be 'unk' or 'error', got {unknown!r}")
        self.d_model, self.level, self.embedding_kind = d_model, level, embedding
        self.out_width = d_model
        self.unknown, self.min_count, self.lowercase = unknown, min_count, lowercase
        self.vocab_field = field
        self.positional = make_positional_1d(positional, d_model, max_len)
        self.register_buffer("vocab_bytes", torch.zeros(0, dtype=torch.uint8))
        self.vocab: Vocabulary | None = None
        self.embed: nn.Module | None = None
        self.unknown_count = 0  # tokens mapped to <unk> since construction

    @property
    def max_set_size(self) -> int | None:
        """A learned positional table's length (``backbone.abilities.MaxSetSize``)."""
        return max_positions(self.positional)

    # -- vocabulary -----------------------------------------------------------------------
    def tokens_of(self, text: str | list[str]) -> list[str]:
        """A string is tokenized by ``level``; a list is taken as already tokenized."""
        if isinstance(text, list):
            return [t.lower() for t in text] if self.lowercase else list(text)
        return tokenize(text.lower() if self.lowercase else text, self.level)

    def build_vocab(self, texts: list[str]) -> Vocabulary:
        """Build the vocabulary from the training strings (once; then it is fixed)."""
        self._set_vocab(Vocabulary.build((self.tokens_of(t) for t in texts), self.min_count))
        return self.vocab

    def receive(self, spec: DataSpec) -> str | None:
        """At the start of fit, build the vocabulary from the training texts of ``field``
        (once: a model that has one, from an earlier fit or a checkpoint, keeps it)."""
        if spec.fit and self.vocab is None:
            self.build_vocab(spec.texts(self.vocab_field, "TextEncoder"))
            return f"vocabulary: {len(self.vocab)} tokens from the training {self.vocab_field!r}"
        return None

    def _set_vocab(self, vocab: Vocabulary) -> None:
        if self.embedding_kind == "onehot" and len(vocab) > self.d_model:
            raise ValueError(
                f"one-hot embedding needs the vocabulary ({len(vocab)} tokens) to fit in d_model="
                f"{self.d_model}; raise d_model, use min_count, or use embedding='learned'"
            )
        self.vocab = vocab
        self.vocab_bytes = vocab.to_tensor().to(self.vocab_bytes.device)
        if self.embedding_kind == "learned":
            self.embed = nn.Embedding(len(vocab), self.d_model, padding_idx=vocab.pad)
        else:
            self.embed = None

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        vocab = saved_vocabulary(state_dict.get(prefix + "vocab_bytes"), self.vocab, "input")
        if vocab is not None:
            self._set_vocab(vocab)  # a checkpoint brings its own vocabulary
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    # -- encoding -------------------------------------------------------------------------
    def encode(self, texts: list[str], ids: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Strings -> token ids (B, N) long padded with <pad>, and mask (B, N) bool."""
        return self._pad(self._token_ids(texts, ids))

    def _pad(self, seqs: list[list[int]]) -> tuple[Tensor, Tensor]:
        N = max(len(s) for s in seqs)
        tok = torch.full((len(seqs), N), self.vocab.pad, dtype=torch.long)
        for i, s in enumerate(seqs):
            tok[i, : len(s)] = torch.tensor(s)
        return tok, tok != self.vocab.pad

    def _token_ids(self, texts: list[str], ids: Tensor | None = None) -> list[list[int]]:
        """Strings -> one list of token ids each (errors name the sample id)."""
        if self.vocab is None:
            raise RuntimeError("TextEncoder has no vocabulary: fit the model first (build_vocab) "
                               "or load it from a checkpoint")
        if isinstance(texts, str):
            raise ValueError(f"batch['{self.vocab_field}'] must be a list of strings, got one str")
        seqs = []
        for i, text in enumerate(texts):
            # the sample's name only on an error: ids may be on the device (a read is a sync)
            def name(i=i):
                return (f"sample id {int(ids[i])}" if ids is not None else f"item {i}")
            toks = self.tokens_of(text)
            if not toks:
                raise ValueError(f"{name()} in batch['{self.vocab_field}'] is empty text ({text!r}); "
                                 "every input needs at least one token")
            seq, unknown = self.vocab.encode(toks)
            if unknown:
                if self.unknown == "error":
                    raise ValueError(
                        f"{name()} ({text!r}) has tokens not in the vocabulary of {len(self.vocab)}: "
                        f"{sorted(set(unknown))}; set unknown='unk' to map them to <unk>"
                    )
                self.unknown_count += len(unknown)
                log.warning("%s (%r): %d token(s) %s mapped to <unk> (%d so far)", name(), text,
                            len(unknown), sorted(set(unknown)), self.unknown_count)
            seqs.append(seq)
        return seqs

    def tokenized(self, batch: dict) -> dict:
        """The batch with its strings (``batch[field]``) replaced by their ids under
        ``"tokens"`` (B, N) long, padded with <pad>: tokenizing stays in Python, an exported
        model reads the ids (``backbone.abilities.Tokenizes``)."""
        tok, _ = self.encode(batch[self.vocab_field], batch.get("ids"))
        return {**{k: v for k, v in batch.items() if k != self.vocab_field}, TOKENS: tok}

    def tokenizer(self) -> dict:
        """How to turn text into the ids ``tokenized`` gives, for a server: ``vocab`` lists the
        tokens in id order; pad the ids to the batch's longest with ``pad``."""
        if self.vocab is None:
            raise RuntimeError("TextEncoder has no vocabulary: fit the model first or load it from a checkpoint")
        return {"field": self.vocab_field, "level": self.level, "lowercase": self.lowercase,
                "split": "characters" if self.level == "char" else "whitespace (str.split)",
                "unknown": self.unknown, "pad": self.vocab.pad, "unk": self.vocab.unk,
                "vocab": list(self.vocab.tokens)}

    def forward(self, batch: dict) -> VectorSet:
        if TOKENS in batch:  # ids from ``tokenized`` (an exported model's input)
            if self.vocab is None:
                raise RuntimeError("TextEncoder has no vocabulary: fit the model first (build_vocab) "
                                   "or load it from a checkpoint")
            tok = batch[TOKENS]
            mask = tok != self.vocab.pad
            padded = batch.get("padded")
        else:  # tokenized here, on the host: the lengths say whether the batch is padded
            seqs = self._token_ids(batch[self.vocab_field], batch.get("ids"))
            tok, mask = self._pad(seqs)
            padded = min(map(len, seqs)) < tok.shape[1]
        device = self.vocab_bytes.device
        tok, mask = tok.to(device), mask.to(device)
        if self.embed is not None:
            x = self.embed(tok)  # (B, N, D)
        else:
            x = F.one_hot(tok, self.d_model).float()  # (B, N, D), fixed
        pe = self.positional(tok.shape[1], device)
        if pe is not None:
            x = x + pe
        return VectorSet(x=x * mask[..., None].to(x.dtype), mask=mask, padded=padded)
