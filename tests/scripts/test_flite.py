"""scripts/flite_synth.py (where flite is installed): phones of known words in Festival's radio
set, words spanning exactly their segments, the same audio and phones as the ``flite`` program
whatever was synthesized before, and the voices' tempo and F0 settings."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vecset.encoders.speech import FESTIVAL_PHONES

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))
import flite_synth as F  # noqa: E402

needs_flite = pytest.mark.skipif(F.missing() is not None, reason=F.missing() or "")
needs_program = pytest.mark.skipif(shutil.which("flite") is None,
                                   reason="the flite program is missing: apt-get install flite (Debian package)")

# CMUdict (radio phones: unstressed AH0 -> ax): SHE SH IY1, THOUGHT TH AO1 T, ABOUT AH0 B AW1 T,
# ORANGE AO1 R AH0 N JH, YELLOW Y EH1 L OW0, JUDGE JH AH1 JH; "the" before a vowel is dh iy
# (flite's post-lexical rule, as Festival's)
SENTENCE = "She thought about the orange yellow judge."
PHONES = {"she": ["sh", "iy"], "thought": ["th", "ao", "t"], "about": ["ax", "b", "aw", "t"], "the": ["dh", "iy"],
          "orange": ["ao", "r", "ax", "n", "jh"], "yellow": ["y", "eh", "l", "ow"], "judge": ["jh", "ah", "jh"]}


@pytest.fixture(scope="module")
def flite():
    return F.Flite()


def word_phones(sp: F.Spoken) -> list[tuple[str, list[str]]]:
    """Each word and the phones of the segments its span covers (by end time)."""
    return [(w, [p for t, p in sp.segments if s < t <= e]) for s, e, w in sp.words]


@needs_flite
@pytest.mark.parametrize("voice", sorted(F.VOICES))
def test_known_words_have_their_dictionary_phones(flite, voice):
    flite.set_voice(voice, 1.0)
    sp = flite.say(SENTENCE)
    assert sp.rate == 16000 and sp.wav.dtype == np.int16
    assert word_phones(sp) == list(PHONES.items())
    assert [p for _, p in sp.segments] == ["pau", *sum(PHONES.values(), []), "pau"]
    ends = [t for t, _ in sp.segments]
    assert ends == sorted(ends) and abs(ends[-1] - len(sp.wav) / sp.rate) < 0.01
    # a word starts where the segment before its first one ends: spans meet or leave a pause
    assert sp.words[0][0] == ends[0] and all(a[1] <= b[0] for a, b in zip(sp.words, sp.words[1:], strict=False))


@needs_flite
def test_phones_are_festival_radio_phones_and_a_possessive_is_a_word_of_its_own(flite):
    flite.set_voice("awb", 1.0, 110.0)
    sp = flite.say("The stranger's dogs aren't well-known, sir.")
    assert {p for _, p in sp.segments} <= set(FESTIVAL_PHONES)
    # flite splits the possessive off (with its own z; the generator joins it back) and drops
    # the apostrophe of a contraction; a hyphen splits a word
    assert [w for _, _, w in sp.words] == ["the", "stranger", "'s", "dogs", "arent", "well", "known", "sir"]
    assert word_phones(sp)[2] == ("'s", ["z"])


@needs_flite
def test_set_voice_refuses_what_a_voice_does_not_do(flite):
    with pytest.raises(ValueError, match="ignores a target F0 mean"):
        flite.set_voice("rms", 1.0, 120.0)
    with pytest.raises(ValueError, match="offered are awb, rms"):
        flite.set_voice("slt")


@needs_flite
@needs_program
def test_audio_and_phones_are_the_flite_programs_whatever_came_before(flite, tmp_path):
    flite.set_voice("rms", 0.9)
    flite.say("Something else first, to move the noise generator on.")
    flite.set_voice("awb", 1.1, 120.0)
    sp = flite.say(SENTENCE)
    res = subprocess.run(["flite", "-voice", "awb", "--setf", "duration_stretch=1.1", "--setf", "int_f0_target_mean=120",
                          "-psdur", "-t", SENTENCE, "-o", str(tmp_path / "p.wav")], capture_output=True, text=True,
                         check=True)
    printed = [tok.rsplit(":", 1) for tok in res.stdout.split()]  # phone:end, %1.3f
    assert [p for p, _ in printed] == [p for _, p in sp.segments]
    assert max(abs(float(t) - e) for (_, t), (e, _) in zip(printed, sp.segments, strict=True)) < 0.0006
    import soundfile as sf

    wav, sr = sf.read(tmp_path / "p.wav", dtype="int16")
    assert sr == sp.rate and np.array_equal(wav, sp.wav)


@needs_program
@pytest.mark.parametrize("voice", sorted(F.VOICES))
def test_which_voices_honour_a_target_f0_mean_and_a_tempo(voice, tmp_path):
    import soundfile as sf

    def say(*setf: str) -> np.ndarray:
        args = [a for s in setf for a in ("--setf", s)]
        subprocess.run(["flite", "-voice", voice, *args, "-t", SENTENCE, "-o", str(tmp_path / "x.wav")], check=True,
                       capture_output=True)
        return sf.read(tmp_path / "x.wav", dtype="int16")[0]

    low, high = say("int_f0_target_mean=90"), say("int_f0_target_mean=140")
    assert (len(low) != len(high) or not np.array_equal(low, high)) == F.VOICES[voice]
    assert len(say("duration_stretch=1.25")) > 1.15 * len(say("duration_stretch=1.0"))


def test_offered_and_refused_voices_are_flite_voices():
    assert set(F.VOICES) == {"awb", "rms"} and not set(F.VOICES) & set(F.LEAKING)
    assert F.LEAKING == {"slt": "slt", "kal": "kal", "kal16": "kal"}
    if shutil.which("flite"):  # every voice the program lists is offered, refused, or awb_time
        listed = subprocess.run(["flite", "-lv"], capture_output=True, text=True).stdout.split(":", 1)[1].split()
        assert set(listed) - set(F.VOICES) - set(F.LEAKING) <= {"awb_time"}
