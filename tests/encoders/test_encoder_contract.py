"""The encoder contract: every encoder subclasses Encoder; the hand-over (``receive``) gives
TextEncoder its vocabulary and a global-normalization SpeechEncoder its statistics, at fit."""

import pytest
import torch

import vecset.encoders as encoders
from vecset.contracts.data_spec import DataSpec
from vecset.encoders import SpeechEncoder, TextEncoder, VectorEncoder
from vecset.encoders.contract import Encoder


def test_every_encoder_subclasses_the_contract():
    found = [getattr(encoders, n) for n in encoders.__all__ if n.endswith("Encoder") and n != "Encoder"]
    assert len(found) == 7 and all(issubclass(c, Encoder) for c in found), found
    with pytest.raises(TypeError, match="abstract method"):
        Encoder()


def test_only_utterance_normalization_declares_per_set_statistics():
    # what vecset predict asks before reading a long recording in chunks (the whole one's statistics)
    assert not VectorEncoder(2, 4).normalizes_per_set and not TextEncoder(4).normalizes_per_set
    assert [SpeechEncoder(40, 8, normalization=n).normalizes_per_set for n in ("utterance", "global", "none")] == [
        True, False, False]


def test_default_hand_over_takes_nothing():
    enc = VectorEncoder(2, 4)
    before = {k: v.clone() for k, v in enc.state_dict().items()}
    enc.receive(DataSpec(fit=True, class_names=["a", "b"], train_inputs=[torch.ones(3, 2)]))
    assert all(torch.equal(before[k], v) for k, v in enc.state_dict().items())


def test_text_encoder_builds_its_vocabulary_at_fit_only():
    enc = TextEncoder(8, field="text")
    enc.receive(DataSpec(fit=False, train_texts={"text": ["abc"]}))  # test/predict: a checkpoint's
    assert enc.vocab is None
    enc.receive(DataSpec(fit=True, train_texts={"text": ["abca", "cb"], "target": ["X Y"]}))
    assert enc.vocab.tokens[4:] == ["a", "b", "c"]
    enc.receive(DataSpec(fit=True, train_texts={"text": ["zzz"]}))  # kept: a second fit does not rebuild
    assert enc.vocab.tokens[4:] == ["a", "b", "c"]
    with pytest.raises(ValueError, match=r"TextEncoder builds a vocabulary from the training texts of batch "
                                         r"field 'words' but Plain gives none for that field \(it gives none\)"):
        TextEncoder(8, field="words").receive(DataSpec(source="Plain", fit=True))


def test_speech_encoder_fits_global_statistics_on_the_handed_over_frames():
    torch.manual_seed(0)
    frames = [torch.randn(5, 3) * 2 + 1, torch.randn(7, 3)]
    enc = SpeechEncoder(in_dim=3, d_model=8, normalization="global")
    enc.receive(DataSpec(fit=False, train_inputs=frames))
    assert not bool(enc.stats_fitted)
    assert enc.receive(DataSpec(fit=True, train_inputs=frames)) == \
        "global mean/variance normalization fitted on 2 training utterances"
    ref = SpeechEncoder(in_dim=3, d_model=8, normalization="global")
    ref.set_global_stats(frames)
    assert bool(enc.stats_fitted)
    torch.testing.assert_close(enc.mean, ref.mean)
    torch.testing.assert_close(enc.std, ref.std)
    enc.receive(DataSpec(fit=True, train_inputs=[torch.zeros(4, 3)]))  # fitted once: kept
    torch.testing.assert_close(enc.mean, ref.mean)
    with pytest.raises(ValueError, match=r"task 'sp': SpeechEncoder\(normalization='global'\) fits its "
                                         "normalization on the training frames but Sets gives none"):
        SpeechEncoder(in_dim=3, d_model=8, normalization="global").receive(DataSpec(source="Sets", task="sp", fit=True))
    # utterance normalization needs no statistics: no frames, no error
    SpeechEncoder(in_dim=3, d_model=8).receive(DataSpec(fit=True))
