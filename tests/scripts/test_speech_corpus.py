"""scripts/make_speech_corpus.py: grammar and speakers (pure Python), and, where Festival is
installed, a tiny generation that must be identical for 1 and 2 jobs and valid TIMIT layout."""

from __future__ import annotations

import importlib.util
import random
import shutil
import sys
from pathlib import Path

import pytest

from vecset.encoders.speech import FESTIVAL_PHONES, read_phn

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make_speech_corpus.py"
spec = importlib.util.spec_from_file_location("make_speech_corpus", SCRIPT)
corpus = importlib.util.module_from_spec(spec)
sys.modules["make_speech_corpus"] = corpus
spec.loader.exec_module(corpus)


def test_sentences_are_seeded():
    a = [corpus.sentence(random.Random(f"0:sentence:{i}")) for i in range(5)]
    b = [corpus.sentence(random.Random(f"0:sentence:{i}")) for i in range(5)]
    c = [corpus.sentence(random.Random(f"1:sentence:{i}")) for i in range(5)]
    assert a == b and a != c and all(s.endswith(".") and s[0].isupper() for s in a)


def test_speakers_split_disjoint_and_cover_every_voice():
    spk = corpus.make_speakers(12, seed=0)
    by = {s: [x for x in spk if x.split == s] for s in ("train", "dev", "test")}
    assert [len(by[s]) for s in ("train", "dev", "test")] == [6, 3, 3]
    for s in by.values():
        assert {x.voice for x in s} == {"kal", "ked", "slt"}
    assert all(0.9 <= x.resample <= 1.1 for x in spk)
    assert all((x.f0_mean is None) == (x.voice == "slt") for x in spk)
    with pytest.raises(ValueError, match="multiple of 3 and at least 9"):
        corpus.make_speakers(10, seed=0)


@pytest.mark.skipif(shutil.which("festival") is None, reason="Festival is not installed")
def test_generation_deterministic_for_job_counts(tmp_path):
    try:
        corpus.check_festival(install=False)
    except SystemExit:
        pytest.skip("Festival voices are not installed")
    one, two = tmp_path / "one", tmp_path / "two"
    corpus.generate(one, utterances=3, speakers=9, seed=5, jobs=1, fmt="wav")
    corpus.generate(two, utterances=3, speakers=9, seed=5, jobs=2, fmt="wav")
    assert corpus.digest(one) == corpus.digest(two)
    import soundfile as sf

    for wav in one.rglob("*.wav"):
        info = sf.info(str(wav))
        assert info.samplerate == 16000 and info.channels == 1
        segs = read_phn(wav.with_suffix(".phn"), info.frames, list(FESTIVAL_PHONES))
        assert segs[0].start == 0 and segs[-1].end == info.frames
        assert segs[0].phone == "h#" == segs[-1].phone
        words = wav.with_suffix(".wrd").read_text().split()
        txt = wav.with_suffix(".txt").read_text().split()
        assert txt[:2] == ["0", str(info.frames)] and len(words) % 3 == 0 and len(words) >= 3
