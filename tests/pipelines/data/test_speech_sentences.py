"""The speech data module warns when a dev or test utterance says a training sentence (its
.txt, without case, punctuation and extra whitespace), naming the count and examples, and when
train and test share speakers (``pipelines/data/speech_checks.py``)."""

from __future__ import annotations

import logging

from speech_corpus_helpers import write_lists, write_utterance

from vecset.encoders.speech import normalise_sentence, read_txt
from vecset.pipelines.speech.data import SpeechFramesDataModule


def test_normalised_sentences(tmp_path):
    assert normalise_sentence("  The CAT,  sat!\n") == "the cat sat"
    (tmp_path / "a.txt").write_text("0 46797 She had your dark suit.\n")
    assert read_txt(tmp_path / "a.txt") == "She had your dark suit."
    (tmp_path / "b.txt").write_text("no sample numbers here\n")
    assert read_txt(tmp_path / "b.txt") == "no sample numbers here"


def test_shared_sentences_are_a_warning_with_their_count(tmp_path, caplog):
    w = [(0, 4000, "one")]
    write_utterance(tmp_path, "s1/a", w, "The cat sat.")
    write_utterance(tmp_path, "s1/b", w, "A dog ran")
    write_utterance(tmp_path, "s2/c", w, "the CAT   sat")  # the same sentence as s1/a
    write_utterance(tmp_path, "s2/d", w, "A new one.")
    write_utterance(tmp_path, "s3/e", w, "a dog ran!")  # = s1/b
    write_utterance(tmp_path, "s3/f", w, "The cat sat")  # = s1/a
    write_utterance(tmp_path, "s3/g", w, "Nothing shared")
    write_lists(tmp_path, train=["s1/a", "s1/b"], dev=["s2/c", "s2/d"], test=["s3/e", "s3/f", "s3/g"])
    dm = SpeechFramesDataModule(root=str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="vecset.pipelines.speech.checks"):
        dm.setup("fit")
    msgs = [r.getMessage() for r in caplog.records if "say a sentence" in r.getMessage()]
    assert len(msgs) == 2
    assert msgs[0].startswith("speech: 1 of the 2 val utterances with a .txt (1 distinct sentences) say a sentence "
                              "that a training utterance says too")
    assert "s2/c.flac and s1/a.flac: 'the cat sat'" in msgs[0]
    assert msgs[1].startswith("speech: 2 of the 3 test utterances with a .txt (2 distinct sentences)")
    assert dm.shared_sentences == {"val": 1, "test": 2}
    caplog.clear()
    # disjoint sentences: no warning, counts of 0
    write_lists(tmp_path, test=["s2/d", "s3/g"], dev=["s2/d"])
    dm = SpeechFramesDataModule(root=str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="vecset.pipelines.speech.checks"):
        dm.setup("test")
    assert not [r for r in caplog.records if "say a sentence" in r.getMessage()]
    assert dm.shared_sentences == {"val": 0, "test": 0}


def test_speakers_shared_by_train_and_test_are_a_warning(tmp_path, caplog):
    w = [(0, 4000, "one")]
    for name in ("s1/a", "s1/b", "s2/c", "s3/d"):
        write_utterance(tmp_path, name, w, name)
    write_lists(tmp_path, train=["s1/a", "s2/c"], dev=["s3/d"], test=["s1/b", "s3/d"])
    with caplog.at_level(logging.WARNING, logger="vecset.pipelines.speech.checks"):
        SpeechFramesDataModule(root=str(tmp_path)).setup(None)  # every split
    assert [r.getMessage() for r in caplog.records] == [
        "speech: train and test share speakers ['s1'] (the split is not speaker-disjoint)"]
