"""The head contract: every head subclasses Head; the hand-over (``receive``) checks the data
(class count, feature width) and takes what the head learns from it (scaler, vocabulary)."""

import pytest
import torch
from torch import Tensor

import vecset.heads as heads
from vecset.contracts.data_spec import DataSpec
from vecset.heads import (
    LabelingHead,
    NadarayaWatsonHead,
    SegmentDecoder,
    Seq2SeqHead,
    SequenceHead,
    TransformerDecoder,
)
from vecset.heads.contract import Head

PHONES = ["K AE T", "D AO G", "B ER D"]


def test_every_head_subclasses_the_contract():
    found = [getattr(heads, n) for n in heads.__all__ if n.endswith("Head") and n != "Head"]
    assert {c.__name__ for c in found} == {"LabelingHead", "SequenceHead", "Seq2SeqHead", "NadarayaWatsonHead", "PretextHead"}
    assert all(issubclass(c, Head) for c in found)
    built = [LabelingHead(8, 3), SequenceHead(8, 1, task="regression"), NadarayaWatsonHead(),
             Seq2SeqHead(8, TransformerDecoder(8, 1, 2))]
    assert [h.monitor for h in built] == [("val_acc", "max"), ("val_rmse", "min"), ("val_rmse", "min"),
                                          ("val_per", "min")]
    assert [h.needs_batch for h in built] == [False, False, True, True]


def test_only_a_labeling_head_with_a_decoder_declares_one():
    """``segment_decoder`` is declared, not probed: None for every head by default (Seq2SeqHead's
    ``decoder`` attribute is its transformer, not a segment decoder), the configured one for
    LabelingHead, whose ``predict`` then gives the log-posteriors to decode."""
    dec = SegmentDecoder(2.0, 2)
    built = [LabelingHead(8, 3), SequenceHead(8, 1, task="regression"), NadarayaWatsonHead(),
             Seq2SeqHead(8, TransformerDecoder(8, 1, 2)), LabelingHead(8, 3, decoder=dec)]
    assert [h.segment_decoder() for h in built] == [None, None, None, None, dec]
    out, batch = torch.randn(2, 5, 3), {"mask": torch.tensor([[True] * 5, [True] * 3 + [False] * 2])}
    assert "log_prob" not in built[0].predict(out, batch)
    lp = built[-1].predict(out, batch)["log_prob"]
    assert [t.shape for t in lp] == [(5, 3), (3, 3)]
    torch.testing.assert_close(lp[1], out[1, :3].log_softmax(-1))


def test_a_head_missing_part_of_the_contract_cannot_be_built():
    class NoLoss(Head):
        monitor = ("val_acc", "max")

        def forward(self, vs, features=None, batch=None) -> Tensor:
            return vs.x

    with pytest.raises(TypeError, match="abstract method"):
        NoLoss()


def test_class_count_mismatch_names_the_task_and_the_data():
    spec = DataSpec(source="CoNLLUDataModule", task="pos", class_names=["NOUN", "VERB"])
    with pytest.raises(ValueError, match=r"^task 'pos': the head predicts 3 classes but the data has 2 "
                                         r"\(CoNLLUDataModule.class_names = \['NOUN', 'VERB'\]\)"):
        LabelingHead(8, 3).receive(spec)
    with pytest.raises(ValueError, match=r"^the head predicts 3 classes but the data has 2"):
        SequenceHead(8, 3).receive(DataSpec(class_names=["a", "b"]))
    LabelingHead(8, 2).receive(spec)  # matching: nothing to say
    SequenceHead(8, 1, task="regression").receive(DataSpec(class_names=["a", "b"]))  # no classes to check


def test_regression_scaler_is_fitted_at_fit_only():
    y = torch.tensor([[1.0], [3.0], [5.0]])
    head = SequenceHead(8, 1, task="regression")
    head.receive(DataSpec(fit=False, train_targets=y))  # test/predict: the checkpoint's scaler stays
    assert head.target_mean.item() == 0 and head.target_std.item() == 1
    head.receive(DataSpec(fit=True, train_targets=y))
    torch.testing.assert_close(head.target_mean, torch.tensor([3.0]))
    torch.testing.assert_close(head.target_std, torch.tensor([(8 / 3) ** 0.5]))
    with pytest.raises(ValueError, match=r"task 'm': KernelData gives no training targets for the regression "
                                         r"scaler of SequenceHead\(task='regression'\)"):
        head.receive(DataSpec(source="KernelData", task="m", fit=True))


def test_feature_width_must_match_extra_features():
    SequenceHead(8, 2, extra_features=5).receive(DataSpec(feature_width=5))
    with pytest.raises(ValueError, match=r"Mols gives 5 set-level features \(batch\['features'\]\) but the head "
                                         r"has extra_features=0; set the head's extra_features to 5"):
        SequenceHead(8, 2).receive(DataSpec(source="Mols", feature_width=5))
    with pytest.raises(ValueError, match="gives 0 set-level features .* extra_features=5"):
        SequenceHead(8, 2, extra_features=5).receive(DataSpec())


def test_seq2seq_head_builds_its_vocabulary_from_the_handed_over_targets():
    torch.manual_seed(0)
    head = Seq2SeqHead(8, TransformerDecoder(8, 1, 2))
    head.receive(DataSpec(fit=False))  # predicting without a vocabulary: nothing to build from
    assert head.vocab is None
    took = head.receive(DataSpec(fit=True, train_texts={"text": ["cat", "dog", "bird"], "target": PHONES}))
    assert took == "vocabulary: 12 tokens from the training 'target'"  # what the run's log says
    assert head.vocab.tokens[4:] == ["D", "AE", "AO", "B", "ER", "G", "K", "T"]  # by count, ties alphabetical
    embed = head.embed
    assert head.receive(DataSpec(fit=True, train_texts={"target": ["Z Z"]})) is None  # a second fit keeps it
    assert head.embed is embed and "Z" not in head.vocab.index
    with pytest.raises(ValueError, match=r"task 'g2p': Seq2SeqHead builds a vocabulary from the training texts "
                                         r"of batch field 'target' but CMU gives none for that field \(it gives \['text'\]\)"):
        Seq2SeqHead(8, TransformerDecoder(8, 1, 2)).receive(
            DataSpec(source="CMU", task="g2p", fit=True, train_texts={"text": ["cat"]}))


def test_kernel_regression_head_receives_nothing():
    head = NadarayaWatsonHead(init_width=2.0)
    head.receive(DataSpec(fit=True, class_names=["a"], train_targets=torch.ones(3)))
    assert head.width.item() == 2.0
