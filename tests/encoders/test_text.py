"""TextEncoder and Vocabulary: specials, plain-data storage, one-hot/learned embeddings,
positional limits, unknown tokens and empty inputs."""

import io
import logging

import pytest
import torch

from vecset.backbone.vocab import SPECIALS, Vocabulary, tokenize
from vecset.encoders.text import TextEncoder


def test_vocabulary_order_roundtrip_and_decode():
    v = Vocabulary.build([tokenize("abca", "char"), tokenize("cb", "char")])
    assert v.tokens == list(SPECIALS) + ["a", "b", "c"]  # counts tie 2/2/2 -> alphabetical
    assert (v.pad, v.unk, v.bos, v.eos) == (0, 1, 2, 3)
    assert Vocabulary.from_tensor(v.to_tensor()) == v
    ids, unknown = v.encode(["a", "z", "c"])
    assert ids == [4, 1, 6] and unknown == ["z"]
    assert v.decode([2, 4, 5, 3, 6]) == ["a", "b"]  # <bos> dropped, stops at <eos>
    assert tokenize("K AE  T", "word") == ["K", "AE", "T"]


def test_encoder_shapes_mask_and_padding_invariance():
    torch.manual_seed(0)
    enc = TextEncoder(16, positional="sinusoidal")
    enc.build_vocab(["cat", "birds"])
    alone = enc({"text": ["cat"]})
    both = enc({"text": ["cat", "birds"]})
    assert both.x.shape == (2, 5, 16) and both.mask.tolist()[0] == [True] * 3 + [False] * 2
    torch.testing.assert_close(both.x[0, :3], alone.x[0])
    assert both.x[0, 3:].abs().sum() == 0  # padding is zero


def test_onehot_embedding_is_equidistant_and_must_fit():
    enc = TextEncoder(8, embedding="onehot", positional="none")
    enc.build_vocab(["abc"])
    x = enc({"text": ["abc"]}).x[0]  # (3, 8)
    assert torch.equal(x.sum(-1), torch.ones(3)) and set(x.unique().tolist()) == {0.0, 1.0}
    d = torch.cdist(x, x)
    torch.testing.assert_close(d[~torch.eye(3, dtype=torch.bool)], torch.full((6,), 2 ** 0.5))
    assert not list(enc.parameters())  # nothing learned
    with pytest.raises(ValueError, match=r"vocabulary \(10 tokens\) to fit in d_model=8"):
        TextEncoder(8, embedding="onehot").build_vocab(["abcdef"])


def test_unknown_characters_counted_or_error(caplog):
    enc = TextEncoder(8)
    enc.build_vocab(["abc"])
    with caplog.at_level(logging.WARNING, logger="vecset"):
        vs = enc({"text": ["axy", "b"], "ids": torch.tensor([7, 8])})
    assert enc.unknown_count == 2
    assert "sample id 7" in caplog.text and "['x', 'y']" in caplog.text
    tok, _ = enc.encode(["axy"])
    assert tok.tolist() == [[4, 1, 1]] and vs.x.shape == (2, 3, 8)
    strict = TextEncoder(8, unknown="error")
    strict.build_vocab(["abc"])
    with pytest.raises(ValueError, match=r"sample id 3 \('caé'\) has tokens not in the vocabulary of 7: \['é'\]"):
        strict({"text": ["caé"], "ids": torch.tensor([3])})


def test_empty_word_and_long_input_errors():
    enc = TextEncoder(8, positional="learned", max_len=4)
    enc.build_vocab(["abc"])
    with pytest.raises(ValueError, match=r"sample id 5 .* is empty text"):
        enc({"text": ["ab", " "[:0]], "ids": torch.tensor([4, 5])})
    with pytest.raises(ValueError, match="5 positions but the learned positional table holds max_len=4"):
        enc({"text": ["abcab"]})
    with pytest.raises(RuntimeError, match="no vocabulary"):
        TextEncoder(8)({"text": ["a"]})


def test_vocabulary_saved_as_plain_data_with_the_weights():
    torch.manual_seed(0)
    enc = TextEncoder(8, level="word")
    enc.build_vocab(["the cat", "the dog"])
    buf = io.BytesIO()
    torch.save(enc.state_dict(), buf)
    buf.seek(0)
    state = torch.load(buf, weights_only=True)  # no pickled objects
    fresh = TextEncoder(8, level="word")
    fresh.load_state_dict(state)
    assert fresh.vocab == enc.vocab and fresh.vocab.tokens[4] == "the"
    batch = {"text": ["the dog", "cat"]}
    torch.testing.assert_close(fresh(batch).x, enc(batch).x)
    other = TextEncoder(8, level="word")
    other.build_vocab(["a b"])
    with pytest.raises(ValueError, match="differs from the one built from this data"):
        other.load_state_dict(state)
