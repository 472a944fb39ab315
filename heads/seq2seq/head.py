"""Seq2SeqHead (N -> N'): a decoder that attends over the backbone's output and decides
the output length itself (ends with ``<eos>``).

The decoders (``decoders.py``: ``TransformerDecoder``, ``GRUAttentionDecoder``) are
swappable classes, injected with ``class_path``.

Training uses teacher forcing (the decoder reads the reference prefix); ``predict`` decodes
greedily or with beam search (Graves 2012; Sutskever et al. 2014) and returns the
cross-attention weights of the last decoder layer (the input/output alignment).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vecset.backbone.tracing import NotExportable
from vecset.backbone.vocab import Level, Vocabulary, saved_vocabulary, tokenize
from vecset.contracts.abilities import Width
from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet
from vecset.heads.contract import Head

if TYPE_CHECKING:  # the metrics import torchmetrics (seconds): imported where they are used, not to predict
    from torchmetrics import MetricCollection

    from vecset.heads.edit_metrics import TokenIds

log = logging.getLogger("vecset")


# -- the head ----------------------------------------------------------------------------
class Seq2SeqHead(Head):
    """Embeds target tokens, runs a decoder over the backbone's output, projects to tokens.

    Args:
        d_model: width D of the memory (and of the decoder).
        decoder: ``TransformerDecoder`` or ``GRUAttentionDecoder`` (same D).
        max_len: most tokens a decode emits, ``<eos>`` included; a decode that has not
            emitted ``<eos>`` by then stops there, is flagged (``finished`` False) and logged.
        beam_size: 1 = greedy; > 1 = beam search (used by metrics and predict).
        length_penalty: final beam scores are log p / length^length_penalty.
        label_smoothing: cross-entropy label smoothing.
        field: batch key of the target strings (``batch[field]``: B str); ``level`` says
            how they are tokenized (``word``: whitespace, e.g. phones "K AE T").
        references_field: optional batch key with several references per item (B lists
            of str); metrics then count the closest reference.

    The target vocabulary is built from the training targets of ``field`` at the start of
    fit (``receive``, the hand-over) and saved as a uint8 buffer, like ``TextEncoder``'s.

    Shapes:
        VectorSet (B, N, D) -> {"memory" (B, N, D), "memory_mask" (B, N), and with
        targets "logits" (B, T+1, V), "targets" (B, T+1)} where T is the longest target.
    """

    # declared (backbone.abilities.NotExported): export refuses it before reading data
    export_refusal = ("Seq2SeqHead decodes token by token (greedy or beam search: a loop whose length and "
                      "beams depend on the tokens it emits), which one exported graph cannot hold; serve it "
                      "with the PyTorch model (vecset predict)")

    task = "seq2seq"
    monitor = ("val_per", "min")
    needs_batch = True  # teacher forcing reads the targets: the step passes the batch
    # only how outputs are decoded, not the weights: a checkpoint may be decoded with other
    # values (``vecset predict ... --model.init_args.head.init_args.beam_size 5``)
    decode_settings = ("max_len", "beam_size", "length_penalty")

    def __init__(self, d_model: int, decoder: nn.Module, max_len: int = 32, beam_size: int = 1,
                 length_penalty: float = 0.0, label_smoothing: float = 0.0, field: str = "target",
                 level: Level = "word", references_field: str = "references") -> None:
        super().__init__()
        if isinstance(decoder, Width) and decoder.d_model != d_model:
            raise ValueError(f"decoder width {decoder.d_model} != head d_model={d_model}")
        if max_len < 1 or beam_size < 1:
            raise ValueError(f"need max_len >= 1 and beam_size >= 1, got {max_len}, {beam_size}")
        self.d_model, self.decoder = d_model, decoder
        self.in_width = d_model
        self.max_len, self.beam_size, self.length_penalty = max_len, beam_size, length_penalty
        self.label_smoothing, self.level = label_smoothing, level
        self.vocab_field, self.references_field = field, references_field
        self.register_buffer("vocab_bytes", torch.zeros(0, dtype=torch.uint8))
        self.vocab: Vocabulary | None = None
        self.embed: nn.Embedding | None = None
        self.proj: nn.Linear | None = None
        self.last_unfinished = 0  # decodes of the last call that hit max_len without <eos>

    # -- vocabulary (as TextEncoder) ------------------------------------------------------
    def build_vocab(self, texts: list[str]) -> Vocabulary:
        self._set_vocab(Vocabulary.build(tokenize(t, self.level) for t in texts))
        return self.vocab

    def receive(self, spec: DataSpec) -> str | None:
        """At the start of fit, build the output vocabulary from the training targets (once:
        a model that has one, from an earlier fit or a checkpoint, keeps it)."""
        if spec.fit and self.vocab is None:
            self.build_vocab(spec.texts(self.vocab_field, "Seq2SeqHead"))
            return f"vocabulary: {len(self.vocab)} tokens from the training {self.vocab_field!r}"
        return None

    def _set_vocab(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self.vocab_bytes = vocab.to_tensor().to(self.vocab_bytes.device)
        self.embed = nn.Embedding(len(vocab), self.d_model, padding_idx=vocab.pad)
        self.proj = nn.Linear(self.d_model, len(vocab))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        vocab = saved_vocabulary(state_dict.get(prefix + "vocab_bytes"), self.vocab, "output")
        if vocab is not None:
            self._set_vocab(vocab)  # a checkpoint brings its own vocabulary
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _need_vocab(self) -> Vocabulary:
        if self.vocab is None:
            raise RuntimeError("Seq2SeqHead has no vocabulary: fit the model first (build_vocab) "
                               "or load it from a checkpoint")
        return self.vocab

    def encode_targets(self, texts: list[str]) -> tuple[Tensor, Tensor]:
        """Strings -> decoder input ``<bos> y`` and output ``y <eos>``, (B, T+1) padded."""
        vocab = self._need_vocab()
        seqs = []
        for text in texts:
            ids, unknown = vocab.encode(tokenize(text, self.level))
            if unknown:
                log.warning("target %r: tokens %s not in the output vocabulary, mapped to <unk>",
                            text, sorted(set(unknown)))
            seqs.append(ids)
        T = max(len(s) for s in seqs) + 1
        y_in = torch.full((len(seqs), T), vocab.pad, dtype=torch.long)
        y_out = torch.full((len(seqs), T), vocab.pad, dtype=torch.long)
        for i, s in enumerate(seqs):
            y_in[i, : len(s) + 1] = torch.tensor([vocab.bos] + s)
            y_out[i, : len(s) + 1] = torch.tensor(s + [vocab.eos])
        return y_in, y_out

    # -- teacher forcing ------------------------------------------------------------------
    def _decode_teacher(self, y_in: Tensor, memory: Tensor, memory_mask: Tensor,
                        need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        emb = self.embed(y_in)  # (B, T, D)
        state = self.decoder.init_state(memory, memory_mask)
        h, _, w = self.decoder(emb, y_in != self.vocab.pad, memory, memory_mask, state, need_weights=need_weights)
        return self.proj(h), w  # (B, T, V), (B, T, N)

    def forward(self, vs: VectorSet, features: Tensor | None = None, batch: dict | None = None) -> dict:
        self._need_vocab()
        out = {"memory": vs.x, "memory_mask": vs.mask}
        if batch is not None and self.vocab_field in batch:
            y_in, y_out = (t.to(vs.x.device) for t in self.encode_targets(batch[self.vocab_field]))
            out["logits"], _ = self._decode_teacher(y_in, vs.x, vs.mask)
            out["targets"] = y_out
        return out

    def loss(self, out: dict, batch: dict) -> Tensor:
        if "logits" not in out:
            raise ValueError(f"Seq2SeqHead.loss needs the targets in batch['{self.vocab_field}']")
        return F.cross_entropy(out["logits"].flatten(0, 1), out["targets"].flatten(),
                               ignore_index=self.vocab.pad, label_smoothing=self.label_smoothing)

    # -- decoding -------------------------------------------------------------------------
    def _step(self, tokens: Tensor, memory: Tensor, memory_mask: Tensor, state):
        """Log-probabilities of the next token after ``tokens`` (B', t): (B', V), new state."""
        if self.decoder.incremental:
            h, state, _ = self.decoder(self.embed(tokens[:, -1:]), None, memory, memory_mask, state,
                                       need_weights=False)
        else:
            h, _, _ = self.decoder(self.embed(tokens), torch.ones_like(tokens, dtype=torch.bool),
                                   memory, memory_mask, None)
        logits = self.proj(h[:, -1])  # (B', V)
        # a decode never emits <pad> or <bos>: they only frame sequences
        logits[:, [self.vocab.pad, self.vocab.bos]] = float("-inf")
        return logits.log_softmax(-1), state

    @torch.no_grad()
    def greedy(self, memory: Tensor, memory_mask: Tensor, max_len: int | None = None) -> tuple[Tensor, Tensor]:
        """Most likely token at each step. Returns tokens (B, T <= max_len), finished (B,)."""
        vocab, max_len = self._need_vocab(), max_len or self.max_len
        B = memory.shape[0]
        tokens = torch.full((B, 1), vocab.bos, dtype=torch.long, device=memory.device)
        finished = torch.zeros(B, dtype=torch.bool, device=memory.device)
        state = self.decoder.init_state(memory, memory_mask)
        for _ in range(max_len):
            logp, state = self._step(tokens, memory, memory_mask, state)
            nxt = torch.where(finished, vocab.pad, logp.argmax(-1))  # (B,)
            tokens = torch.cat([tokens, nxt[:, None]], 1)
            finished = finished | (nxt == vocab.eos)
            if finished.all():
                break
        return tokens[:, 1:], finished

    @torch.no_grad()
    def beam_search(self, memory: Tensor, memory_mask: Tensor, beam_size: int,
                    max_len: int | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """Keeps the ``beam_size`` best prefixes by summed log-probability; finished beams
        carry on with ``<pad>`` at no cost. Returns the best tokens (B, T), finished (B,)
        and its score (B,) (log p / length^length_penalty)."""
        vocab, max_len, K = self._need_vocab(), max_len or self.max_len, beam_size
        B, N, D = memory.shape
        dev = memory.device
        mem, msk = memory.repeat_interleave(K, 0), memory_mask.repeat_interleave(K, 0)  # (BK, N, .)
        state = self.decoder.init_state(mem, msk)
        tokens = torch.full((B * K, 1), vocab.bos, dtype=torch.long, device=dev)
        scores = torch.zeros(B, K, device=dev)
        scores[:, 1:] = float("-inf")  # all beams start identical: keep one
        finished = torch.zeros(B * K, dtype=torch.bool, device=dev)
        lengths = torch.zeros(B * K, device=dev)
        V = len(vocab)
        done_row = torch.full((V,), float("-inf"), device=dev)
        done_row[vocab.pad] = 0.0
        for _ in range(max_len):
            logp, state = self._step(tokens, mem, msk, state)  # (BK, V)
            logp = torch.where(finished[:, None], done_row, logp)
            cand = (scores.reshape(B * K, 1) + logp).reshape(B, K * V)
            scores, idx = cand.topk(K, dim=-1)  # (B, K)
            src = (torch.arange(B, device=dev)[:, None] * K + idx // V).flatten()  # (BK,)
            tok = (idx % V).flatten()
            tokens = torch.cat([tokens[src], tok[:, None]], 1)
            lengths = lengths[src] + (~finished[src]).float()
            finished = finished[src] | (tok == vocab.eos)
            state = state[src] if state is not None else None
            if finished.all():
                break
        final = scores / lengths.reshape(B, K).clamp(min=1) ** self.length_penalty
        best = final.argmax(-1)  # (B,)
        pick = torch.arange(B, device=dev) * K + best
        return tokens[pick, 1:], finished[pick], final.gather(1, best[:, None])[:, 0]

    def decode(self, memory: Tensor, memory_mask: Tensor, beam_size: int | None = None) -> tuple[Tensor, Tensor]:
        """Greedy (beam 1) or beam search; logs decodes stopped at ``max_len``."""
        k = beam_size or self.beam_size
        tokens, finished = (self.greedy(memory, memory_mask) if k == 1
                            else self.beam_search(memory, memory_mask, k)[:2])
        self.last_unfinished = int((~finished).sum())
        if self.last_unfinished:
            log.warning("%d of %d decodes emitted no <eos> within max_len=%d tokens: stopped there "
                        "(flagged finished=False)", self.last_unfinished, len(finished), self.max_len)
        return tokens, finished

    @torch.no_grad()
    def alignment(self, memory: Tensor, memory_mask: Tensor, tokens: Tensor) -> Tensor:
        """Cross-attention weights (B, T, N) of the last decoder layer for output ``tokens``
        (B, T): the decoder rerun teacher-forced on ``<bos> tokens`` gives the same weights
        as during decoding (attention is causal)."""
        vocab = self._need_vocab()
        y_in = torch.cat([torch.full_like(tokens[:, :1], vocab.bos), tokens[:, :-1]], 1)
        y_in = torch.where(y_in == vocab.eos, vocab.pad, y_in)
        return self._decode_teacher(y_in, memory, memory_mask, need_weights=True)[1]

    # -- metrics and predictions ----------------------------------------------------------
    def metrics(self) -> MetricCollection:
        from torchmetrics import MetricCollection

        from vecset.heads.edit_metrics import PhoneErrorRate, WordErrorRate

        return MetricCollection({"per": PhoneErrorRate(), "wer": WordErrorRate()})

    def _references(self, batch: dict) -> list:
        if self.references_field in batch:
            return [[tokenize(r, self.level) for r in refs] for refs in batch[self.references_field]]
        return [tokenize(t, self.level) for t in batch[self.vocab_field]]

    def metric_inputs(self, out: dict, batch: dict) -> tuple[list | TokenIds, list]:
        """Decoded outputs vs references. In training the teacher-forced argmax is scored
        (cheap; so train_per/train_wer are teacher-forced), in eval real decodes."""
        vocab = self._need_vocab()
        if self.training:
            from vecset.heads.edit_metrics import TokenIds

            # the argmax stays on the device; the metrics decode and score it at the epoch's end,
            # with one read (a training step reads nothing: on a GPU a read waits for the device)
            return TokenIds(out["logits"].argmax(-1), vocab), self._references(batch)
        ids, _ = self.decode(out["memory"], out["memory_mask"])
        # one read of the whole batch, not one per row (each a host-device sync on a GPU)
        preds = [vocab.decode(row) for row in ids.tolist()]
        return preds, self._references(batch)

    def served_outputs(self, out: dict) -> dict[str, Tensor]:
        raise NotExportable(Seq2SeqHead.export_refusal)

    def predict(self, out: dict, batch: dict) -> dict:
        """Per item: output tokens, whether ``<eos>`` was reached, the alignment (T, N)."""
        vocab = self._need_vocab()
        ids, finished = self.decode(out["memory"], out["memory_mask"])
        weights = self.alignment(out["memory"], out["memory_mask"], ids)  # (B, T, N)
        res = {"tokens": [], "finished": finished.tolist(), "alignment": []}
        for i, row in enumerate(ids.tolist()):
            toks = vocab.decode(row)
            res["tokens"].append(toks)
            n = int(out["memory_mask"][i].sum())
            t = len(toks) + int(finished[i])  # the <eos> step too
            res["alignment"].append(weights[i, :t, :n].cpu())
        return res
