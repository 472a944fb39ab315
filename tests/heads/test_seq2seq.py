"""Masked softmax, cross-attention, and Seq2SeqHead: teacher forcing, causality, greedy vs
beam search, max-length stops, alignment weights, memorizing a tiny mapping."""

import logging

import pytest
import torch

from vecset.backbone.attention import MultiHeadSelfAttention
from vecset.backbone.backbone import Backbone
from vecset.backbone.masked_softmax import masked_softmax
from vecset.encoders.text import TextEncoder
from vecset.heads.edit_metrics import PhoneErrorRate, WordErrorRate
from vecset.heads.seq2seq.cross_attention import MultiHeadCrossAttention
from vecset.heads.seq2seq.decoders import GRUAttentionDecoder, TransformerDecoder
from vecset.heads.seq2seq.head import Seq2SeqHead

WORDS = ["cat", "dog", "bird", "fish", "ox", "emu", "gnu", "yak"]
PHONES = ["K AE T", "D AO G", "B ER D", "F IH SH", "AA K S", "IY M Y UW", "N UW", "Y AE K"]


def test_masked_softmax_valid_lengths_1d_and_2d():
    torch.manual_seed(0)
    s = torch.randn(2, 3, 5)
    w = masked_softmax(s, torch.tensor([2, 4]))
    assert torch.all(w[0, :, 2:] == 0) and torch.all(w[1, :, 4:] == 0)  # exactly zero
    torch.testing.assert_close(w[0, :, :2], s[0, :, :2].softmax(-1))
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3))
    w2 = masked_softmax(s, torch.tensor([[1, 2, 3], [5, 0, 4]]))
    assert torch.all(w2[0, 0, 1:] == 0) and torch.all(w2[0, 2, 3:] == 0) and w2[0, 0, 0] == 1
    assert torch.all(w2[1, 1] == 0)  # no valid key: all-zero row, not NaN
    torch.testing.assert_close(w2[1, 0], s[1, 0].softmax(-1))
    heads = masked_softmax(torch.randn(2, 4, 3, 5), torch.tensor([2, 4]))  # (B, H, Q, K)
    assert torch.all(heads[0, :, :, 2:] == 0)
    with pytest.raises(ValueError, match=r"valid_lens \(B, Q\) must be \(2, 3\)"):
        masked_softmax(s, torch.ones(2, 2, dtype=torch.long))


@pytest.mark.parametrize("score", ["scaled_dot", "gaussian", "additive"])
def test_cross_attention_fast_equals_reference_and_ignores_padding(score):
    torch.manual_seed(0)
    att = MultiHeadCrossAttention(16, heads=4, score=score).eval()
    x, mem = torch.randn(2, 3, 16), torch.randn(2, 6, 16)
    mask = torch.tensor([[True] * 4 + [False] * 2, [True] * 6])
    out = att(x, mem, mask)
    att.capture = True
    ref = att(x, mem, mask)
    w = att.last_weights  # (B, H, T, N)
    att.capture = False
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    assert w.shape == (2, 4, 3, 6) and torch.all(w[0, ..., 4:] == 0)
    garbage = mem.clone()
    garbage[0, 4:] = 100.0  # padded memory must not matter
    torch.testing.assert_close(att(x, garbage, mask), out, atol=1e-5, rtol=1e-5)


def test_cross_attention_on_the_same_sequence_is_self_attention():
    torch.manual_seed(0)
    cross = MultiHeadCrossAttention(16, heads=4).eval()
    self_att = MultiHeadSelfAttention(16, heads=4).eval()
    self_att.load_state_dict(cross.state_dict())
    x, mask = torch.randn(2, 5, 16), torch.ones(2, 5, dtype=torch.bool)
    torch.testing.assert_close(cross(x, x, mask), self_att(x, mask), atol=1e-5, rtol=1e-5)


def test_cross_attention_memory_check_counts_the_keys(monkeypatch):
    import vecset.backbone.attention.memory as A

    monkeypatch.setattr(A, "available_memory", lambda device: 10 * 2**20)  # pretend 10 MiB free
    att = MultiHeadCrossAttention(8, heads=2)
    att.capture = True  # the reference path
    x = torch.randn(1, 2, 8)
    assert att(x, torch.randn(1, 100, 8), torch.ones(1, 100, dtype=torch.bool)).shape == (1, 2, 8)
    # 2 queries over a 400,000-vector memory: 4 x 4 B x 1 x 2 x 2 x 400,000 = 25.6 MB > 10 MiB
    mem = torch.randn(1, 400_000, 8)
    with pytest.raises(MemoryError, match=r"reference attention path .* 1 x 2 x 2 x 400000"):
        att(x, mem, torch.ones(1, 400_000, dtype=torch.bool))


def make(decoder: str, d: int = 32, seed: int = 0):
    torch.manual_seed(seed)
    enc = TextEncoder(d)
    enc.build_vocab(WORDS)
    dec = TransformerDecoder(d, depth=2, heads=4) if decoder == "transformer" else GRUAttentionDecoder(d)
    head = Seq2SeqHead(d, dec, max_len=10)
    head.build_vocab(PHONES)
    return enc, Backbone(d, depth=1, heads=4), head


def run(enc, bb, head, batch):
    return head(bb(enc(batch)), batch=batch)


@pytest.mark.parametrize("decoder", ["transformer", "gru"])
def test_teacher_forcing_shapes_and_causality(decoder):
    enc, bb, head = make(decoder)
    batch = {"text": WORDS[:2], "target": PHONES[:2]}
    out = run(enc, bb, head, batch)
    V = len(head.vocab)
    assert out["logits"].shape == (2, 4, V) and out["targets"][0].tolist()[-1] == head.vocab.eos
    loss = head.loss(out, batch)
    assert loss.ndim == 0 and abs(loss.item() - torch.log(torch.tensor(float(V))).item()) < 1.5
    # changing a later target token leaves earlier positions' logits unchanged
    out2 = run(enc, bb, head, {"text": WORDS[:2], "target": ["K AE D", PHONES[1]]})
    torch.testing.assert_close(out2["logits"][0, :3], out["logits"][0, :3])
    assert not torch.allclose(out2["logits"][0, 3], out["logits"][0, 3])


@pytest.mark.parametrize("decoder", ["transformer", "gru"])
def test_greedy_equals_beam_search_with_beam_one(decoder):
    enc, bb, head = make(decoder, seed=1)
    head.eval()
    out = run(enc, bb, head, {"text": WORDS})
    g, gf = head.greedy(out["memory"], out["memory_mask"])
    b, bf, _ = head.beam_search(out["memory"], out["memory_mask"], beam_size=1)
    assert torch.equal(g, b) and torch.equal(gf, bf)
    # a wider beam's score is the model's log-probability of the sequence it returns
    ids, fin, s4 = head.beam_search(out["memory"], out["memory_mask"], beam_size=4)
    v = head.vocab
    y_in = torch.cat([torch.full_like(ids[:, :1], v.bos), ids[:, :-1]], 1)
    y_in = torch.where((y_in == v.eos) | (y_in == v.pad), v.pad, y_in)
    with torch.no_grad():
        logits, _ = head._decode_teacher(y_in, out["memory"], out["memory_mask"])
    logits[..., [v.pad, v.bos]] = float("-inf")
    lp = logits.log_softmax(-1).gather(-1, ids[..., None])[..., 0]  # (B, T)
    real = torch.cumsum((ids == v.eos).long(), 1) - (ids == v.eos).long() == 0  # up to the <eos>
    torch.testing.assert_close((lp * real).nan_to_num(0.0).sum(1), s4, atol=1e-4, rtol=1e-4)


def test_decode_without_eos_stops_at_max_len_and_is_reported(caplog):
    enc, bb, head = make("transformer")
    head.eval()
    with torch.no_grad():
        head.proj.bias[head.vocab.eos] = -1e9  # this model can never end a sequence
    batch = {"text": WORDS[:3], "ids": torch.arange(3)}
    out = run(enc, bb, head, batch)
    with caplog.at_level(logging.WARNING, logger="vecset"):
        pred = head.predict(out, batch)
    assert pred["finished"] == [False] * 3 and [len(t) for t in pred["tokens"]] == [10] * 3
    assert head.last_unfinished == 3 and "3 of 3 decodes emitted no <eos> within max_len=10" in caplog.text
    for k in (1, 3):
        ids, fin = head.decode(out["memory"], out["memory_mask"], beam_size=k)
        assert ids.shape == (3, 10) and not fin.any()


@pytest.mark.parametrize("decoder", ["transformer", "gru"])
def test_memorizes_a_tiny_mapping_and_returns_alignments(decoder):
    enc, bb, head = make(decoder)
    params = [*enc.parameters(), *bb.parameters(), *head.parameters()]
    opt = torch.optim.Adam(params, lr=3e-3)
    batch = {"text": WORDS, "target": PHONES, "ids": torch.arange(8)}
    for _ in range(150):
        loss = head.loss(run(enc, bb, head, batch), batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    head.eval(), bb.eval()
    out = run(enc, bb, head, {"text": WORDS})
    pred = head.predict(out, {"text": WORDS})
    assert [" ".join(t) for t in pred["tokens"]] == PHONES and all(pred["finished"])
    a = pred["alignment"][2]  # "bird" -> B ER D <eos>: (4 outputs, 4 letters)
    assert a.shape == (4, 4)
    torch.testing.assert_close(a.sum(-1), torch.ones(4), atol=1e-5, rtol=1e-5)
    for k in (1, 3):  # beam search finds the same answers
        ids, _ = head.decode(out["memory"], out["memory_mask"], beam_size=k)
        assert [" ".join(head.vocab.decode(r)) for r in ids.tolist()] == PHONES
    # metrics from real decodes
    preds, refs = head.metric_inputs(out, {"target": PHONES})
    per, wer = PhoneErrorRate(), WordErrorRate()
    per.update(preds, refs), wer.update(preds, refs)
    assert per.compute() == 0 and wer.compute() == 0


def test_head_vocabulary_reloads_from_the_state_dict():
    enc, bb, head = make("gru")
    fresh = Seq2SeqHead(32, GRUAttentionDecoder(32), max_len=10)
    fresh.load_state_dict(head.state_dict())
    assert fresh.vocab == head.vocab
    batch = {"text": WORDS[:2], "target": PHONES[:2]}
    vs = bb(enc(batch))
    torch.testing.assert_close(fresh(vs, batch=batch)["logits"], head(vs, batch=batch)["logits"])


def test_phone_and_word_error_rates():
    per, wer = PhoneErrorRate(), WordErrorRate()
    preds = [["K", "AE", "T"], ["D", "AO"], ["T", "AH", "M", "EY", "T", "OW"]]
    refs = [["K", "AE", "T"], ["D", "AO", "G"], [["T", "AH", "M", "EY", "T", "OW"], ["T", "AH", "M", "AA", "T", "OW"]]]
    per.update(preds, refs)
    wer.update(preds, refs)
    assert per.compute().item() == pytest.approx(1 / 12)  # one deletion over 3+3+6 phones
    assert wer.compute().item() == pytest.approx(1 / 3)
    per2 = PhoneErrorRate()
    per2.update([["T", "AH", "M", "AA", "T", "OW"]], [[["T", "AH", "M", "EY", "T", "OW"], ["X"]]])
    assert per2.compute().item() == pytest.approx(1 / 6)  # closest reference counts


def test_error_rates_of_token_ids_are_scored_at_compute_with_one_read():
    """Training's teacher-forced ids reach the metrics as ``TokenIds`` (still on the device):
    nothing is read at ``update``; ``compute`` decodes every kept batch (of different widths)
    with one read and gives the rates the decoded lists give."""
    from torch.overrides import TorchFunctionMode

    from vecset.backbone.vocab import Vocabulary
    from vecset.heads.edit_metrics import TokenIds

    vocab = Vocabulary(["<pad>", "<unk>", "<bos>", "<eos>", "K", "AE", "T", "D", "AO", "G"])
    ix = {t: i for i, t in enumerate(vocab.tokens)}
    batches = [(["K AE T <eos>", "D AO <eos> G"], [["K", "AE", "T"], ["D", "AO", "G"]]),
               (["D AO G T G <eos>"], [[["D", "AO", "G"], ["D", "AO", "G", "T", "G"]]])]

    class Reads(TorchFunctionMode):
        n = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") in {"tolist", "item", "__bool__", "__int__"}:
                Reads.n += 1
            return func(*args, **(kwargs or {}))

    deferred, plain = (PhoneErrorRate(), WordErrorRate()), (PhoneErrorRate(), WordErrorRate())
    for texts, refs in batches:
        ids = torch.tensor([[ix[t] for t in s.split()] for s in texts])
        with Reads():
            for m in deferred:
                m.update(TokenIds(ids, vocab), refs)
        assert Reads.n == 0
        for m in plain:
            m.update([vocab.decode(r) for r in ids.tolist()], refs)
    Reads.n = 0
    with Reads():
        per = deferred[0].compute()
    assert Reads.n == 1
    assert per.item() == pytest.approx(1 / 11) == plain[0].compute().item()  # one deletion over 3+3+5
    assert deferred[1].compute().item() == pytest.approx(1 / 3) == plain[1].compute().item()
    # forward (one batch's value, then the states merged) keeps what earlier updates kept
    both = PhoneErrorRate()
    for k, (texts, refs) in enumerate(batches):
        ids = torch.tensor([[ix[t] for t in s.split()] for s in texts])
        value = both(TokenIds(ids, vocab), refs) if k else both.update(TokenIds(ids, vocab), refs)
    assert value.item() == 0 and both.compute().item() == pytest.approx(1 / 11)
    deferred[0].reset()  # kept ids go too
    deferred[0].update(TokenIds(torch.tensor([[ix["K"], ix["<eos>"]]]), vocab), [["K"]])
    assert deferred[0].compute().item() == 0
