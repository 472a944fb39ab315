"""The one speech reader: an audio file -> an ``Utterance`` with its frames, labels, segments,
words and sentence, from the .phn / .wrd / .txt beside it."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
import torch
from speech_corpus_helpers import N, write_utterance

from vecset.encoders.speech import (
    AudioFile,
    Featurizer,
    SpeechReader,
    find_companion,
    frame_labels,
    num_frames,
    read_audio,
    read_phn,
    read_sentences,
    read_vocabulary,
    read_wrd,
)


def test_read_gives_every_part_of_the_utterance(tmp_path):
    write_utterance(tmp_path, "s1/a", [(0, 3000, "One"), (3000, 3000, "'s"), (4000, 7000, "two")], "One two.",
                    phones=[(0, 4000, "h#"), (4000, N, "aa")])
    audio = tmp_path / "s1" / "a.flac"
    u = SpeechReader("festival").read(audio, uid=7)
    T = num_frames(N)
    assert (u.id, u.path, u.sample_rate, u.samples) == (7, audio, 16000, N)
    # the frames are the featurizer's of the audio reader's waveform; the labels the centre rule's
    torch.testing.assert_close(u.x, Featurizer()(torch.from_numpy(read_audio(audio).wav)), rtol=0, atol=0)
    names = SpeechReader().class_names
    segs = read_phn(audio.with_suffix(".phn"), N, names)
    assert u.segments == segs and u.y.dtype == torch.long and u.y.shape == (T,)
    assert u.y.tolist() == frame_labels(segs, T, names)[0].tolist() and u.ignored == 0
    # the zero-length word is left out and named; the sentence is the .txt's, without sample numbers
    assert [w.word for w in u.words] == ["One", "two"] == [w.word for w in read_wrd(audio.with_suffix(".wrd"), [])]
    assert u.zero_length_words == [f"{audio.with_suffix('.wrd')}:2"]
    assert u.transcript == "One two." and u.wav is None
    assert u.file == AudioFile(audio, 16000, N, T)


def test_unlabelled_kept_wave_and_a_missing_phn(tmp_path):
    write_utterance(tmp_path, "s1/a", [], "x")
    audio = tmp_path / "s1" / "a.flac"
    audio.with_suffix(".phn").rename(audio.with_suffix(".PHN"))  # real TIMIT's upper case is found
    assert find_companion(audio, ".phn") == audio.with_suffix(".PHN")
    reader = SpeechReader()
    u = reader.read(audio, 0, labelled=False, keep_wave=True)
    assert u.y is None and u.segments is None and u.words is None and u.transcript is None
    raw, _ = sf.read(audio, dtype="int16")
    assert u.wav.dtype == torch.int16 and np.array_equal(u.wav.numpy(), raw)  # exact for a 16-bit file
    audio.with_suffix(".PHN").unlink()
    with pytest.raises(ValueError, match=r"s1/a\.flac: no a\.phn next to it"):
        reader.read(audio, 0)


def test_split_vocabulary_and_sentences(tmp_path):
    write_utterance(tmp_path, "s1/a", [(0, 3000, "One"), (3000, 3000, "'s")], "The cat.")
    write_utterance(tmp_path, "s1/b", [(0, 3000, "one"), (3000, 6000, "Two")], "the CAT")
    write_utterance(tmp_path, "s1/c", [], "A dog")
    files = [tmp_path / "s1" / f"{n}.flac" for n in "abc"]
    (tmp_path / "s1" / "c.wrd").unlink()
    words, missing, zero = read_vocabulary(files)
    assert words == {"one", "two"} and missing == 1 and zero == [f"{tmp_path / 's1' / 'a.wrd'}:2"]
    assert read_vocabulary(files[2:]) is None
    assert read_sentences(files) == {"the cat": files[:2], "a dog": files[2:]}
