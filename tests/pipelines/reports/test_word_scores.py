"""Frame accuracy inside unseen vs seen words vs outside words, on a tiny hand-made corpus,
through the test report (test_per_phone.json) with stubbed model outputs."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest
import torch
from speech_corpus_helpers import write_lists, write_utterance

from vecset.encoders.speech import Word, word_frames
from vecset.heads import LabelingHead, SegmentDecoder
from vecset.pipelines.reports.base import ReportContext
from vecset.pipelines.reports.outputs import ScoredBatch
from vecset.pipelines.speech.data import SpeechFramesDataModule
from vecset.pipelines.speech.reports import PerPhoneReport


def test_word_frames_follow_the_frame_centre_rule():
    # centres at 200 + 160 t: [800, 2400) holds the centres of frames 4..13 (840 ... 2280); frame 14's
    # centre 2440 lies in the second word, which overlaps nothing (start <= c < end)
    k = word_frames([Word(800, 2400, "a"), Word(2360, 2400 + 160, "b")], 20)
    assert k[:4].tolist() == [-1] * 4 and k[4:14].tolist() == [0] * 10
    assert k[14].tolist() == 1 and k[15:].tolist() == [-1] * 5  # c_14 = 2440 lies in [2360, 2560)
    assert word_frames([], 3).tolist() == [-1, -1, -1]


def test_seen_unseen_and_outside_frames_in_the_report(tmp_path):
    root = tmp_path / "corpus"
    write_utterance(root, "s1/a", [(0, 4000, "One"), (4000, 8000, "two")], "One two.")
    write_utterance(root, "s2/d", [(0, 8000, "four")], "Four.")
    # test: ONE (seen: case-folded) over frames 4-13, three (unseen) over frames 24-38, 23 frames outside
    write_utterance(root, "s3/t", [(800, 2400, "ONE"), (4000, 6400, "three")], "One three.")
    write_lists(root, train=["s1/a"], dev=["s2/d"], test=["s3/t"])
    dm = SpeechFramesDataModule(root=str(root))
    dm.setup("test")
    batch = next(iter(dm.test_dataloader()))
    y = batch["y"]  # (1, 48): all h#
    h, aa = dm.class_names.index("h#"), dm.class_names.index("aa")
    assert y.shape == (1, 48) and bool((y == h).all())
    pred = y.clone()
    pred[0, 4:9] = aa  # 5 wrong in ONE
    pred[0, 30:33] = aa  # 3 wrong in three
    pred[0, 20] = aa  # 1 wrong outside (between the words)
    logits = torch.nn.functional.one_hot(pred, len(dm.class_names)).float() * 5  # (1, 48, C)
    model = types.SimpleNamespace(head=LabelingHead(8, len(dm.class_names), decoder=SegmentDecoder(3.0, 1)))
    ctx = ReportContext(model, dm, tmp_path)
    ctx._outputs = [ScoredBatch(batch, pred.flatten(), y.flatten(), logits)]
    (path,) = PerPhoneReport().write(ctx)
    rep = json.loads(path.read_text())
    words = rep["words"]
    assert (words["test_word_tokens"], words["unseen_word_tokens"], words["share_unseen_word_tokens"]) == (2, 1, 0.5)
    assert (words["frames_seen_words"], words["frames_unseen_words"], words["frames_outside_words"]) == (10, 15, 23)
    assert words["frame_accuracy_seen_words"] == 0.5 and words["frame_accuracy_unseen_words"] == 0.8
    assert words["frame_accuracy_outside_words"] == round(22 / 23, 4)
    assert words["train_vocabulary"] == 2  # one, two (the dev split's "four" is not training)
    assert rep["frame_accuracy"] == round(39 / 48, 4)
    seg = rep["segments"]
    # reference: h# only, no phones, no boundaries; argmax: h#|aa|h#|aa|h#|aa|h#: 3 aa insertions, 6 boundaries
    assert seg["reference_phones"] == 0 and seg["reference_boundaries"] == 0
    assert seg["argmax"]["phones"] == 3 and seg["argmax"]["boundaries"] == 6
    # the decoder (5 nats per frame against 2 x 3 nats per excursion) keeps the runs of 5 and 3 frames,
    # drops the one-frame aa
    dec = SegmentDecoder(3.0, 1)(logits[0])
    assert dec[20] == h and bool((dec[4:9] == aa).all()) and bool((dec[30:33] == aa).all())
    assert (seg["decoder"]["phones"], seg["decoder"]["boundaries"]) == (2, 4) and rep["segment_decoder"] == "SegmentDecoder(switch_penalty=3.0, min_duration=1)"
    assert rep["test_utterances_sharing_a_training_sentence"] == 0
    assert np.isclose(seg["decoder"]["frame_accuracy"], 40 / 48, atol=1e-4)


def test_a_zero_length_word_is_left_out_of_the_word_scores_and_reported(tmp_path, capsys):
    """A .wrd line whose end is its start (a clitic an aligner gave no time, Festival's 's) does
    not stop the test: the frame scores do not read it; it is counted, named by file:line and
    left out of the word scores (and of the training vocabulary). A .phn keeps the error."""
    root = tmp_path / "corpus"
    write_utterance(root, "s1/a", [(0, 4000, "One"), (4000, 4000, "'s"), (4000, 8000, "two")], "One's two.")
    write_utterance(root, "s2/d", [(0, 8000, "four")], "Four.")
    write_utterance(root, "s3/t", [(800, 2400, "ONE"), (0, 0, "'s"), (4000, 6400, "three")], "One's three.")
    write_lists(root, train=["s1/a"], dev=["s2/d"], test=["s3/t"])
    dm = SpeechFramesDataModule(root=str(root))
    dm.setup("test")
    assert f"speech test: 1 zero-length word (end = start) left out of the word scores: {root / 's3' / 't.wrd'}:2" \
        in capsys.readouterr().out
    assert dm.zero_length_words["test"] == [f"{root / 's3' / 't.wrd'}:2"]
    batch = next(iter(dm.test_dataloader()))
    y = batch["y"]
    logits = torch.nn.functional.one_hot(y, len(dm.class_names)).float()  # (1, 48, C)
    model = types.SimpleNamespace(head=LabelingHead(8, len(dm.class_names)))
    ctx = ReportContext(model, dm, tmp_path)
    ctx._outputs = [ScoredBatch(batch, y.flatten(), y.flatten(), logits)]
    (path,) = PerPhoneReport().write(ctx)
    words = json.loads(path.read_text())["words"]
    assert (words["test_word_tokens"], words["unseen_word_tokens"]) == (2, 1)  # ONE seen, three unseen
    assert (words["frames_seen_words"], words["frames_unseen_words"]) == (10, 15)
    assert words["train_vocabulary"] == 2  # one, two: the zero-length 's is no word of training
    assert words["test_zero_length_words"] == 1 and words["train_zero_length_words"] == 1
    assert words["test_zero_length_word_lines"] == [f"{root / 's3' / 't.wrd'}:2"]
    assert "test words: 1 of 2 tokens unseen in training" in capsys.readouterr().out
    # an end before its start is still an error, and so is a zero-length phone
    (root / "s3" / "t.wrd").write_text("800 2400 ONE\n100 50 three\n")
    with pytest.raises(ValueError, match=r"t\.wrd:2: word end 50 is not after its start 100"):
        SpeechFramesDataModule(root=str(root)).setup("test")
    write_utterance(root, "s3/t", [(800, 2400, "ONE")], "One.", phones=[(0, 4000, "h#"), (4000, 4000, "aa"),
                                                                         (4000, 8000, "h#")])
    with pytest.raises(ValueError, match=r"t\.phn:2"):
        SpeechFramesDataModule(root=str(root)).setup("test")
