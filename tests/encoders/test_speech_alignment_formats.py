"""Alignments beside .phn (encoders/speech/alignment_*.py): Praat TextGrid, Kaldi CTM and
Buckeye .phones read into the phone set's segments; MFA's ARPAbet and silences mapped and counted;
malformed files (overlap, gap, missing tier, past the audio's end, unknown label) are errors
naming file, tier and interval; the format detected beside the audio or chosen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from speech_corpus_helpers import N, textgrid, write_utterance

from vecset.encoders.speech import AlignmentSource, PhoneMap, Segment, SpeechReader, read_phn

# an utterance of N = 8000 samples (0.5 s): MFA's phones and words, in seconds
MFA_PHONES = [(0.0, 0.1, ""), (0.1, 0.2, "W"), (0.2, 0.3, "AH0"), (0.3, 0.4, "ER1"), (0.4, 0.5, "sil")]
MFA_WORDS = [(0.0, 0.1, ""), (0.1, 0.4, "were"), (0.4, 0.5, "")]


def utterance(tmp_path: Path, with_phn: bool = False) -> Path:
    write_utterance(tmp_path, "s1/a", [], "were")
    audio = tmp_path / "s1" / "a.flac"
    for ext in (".wrd", ".txt") + (() if with_phn else (".phn",)):
        audio.with_suffix(ext).unlink()
    return audio


EXPECTED = [Segment(0, 1600, "h#"), Segment(1600, 3200, "w"), Segment(3200, 4800, "ax"),
            Segment(4800, 6400, "er"), Segment(6400, N, "h#")]


@pytest.mark.parametrize("short", [False, True])
def test_mfa_textgrid_is_mapped_to_the_phone_set(tmp_path, short):
    audio = utterance(tmp_path)
    audio.with_suffix(".TextGrid").write_text(textgrid(MFA_PHONES, MFA_WORDS, short=short))
    u = SpeechReader("festival").read(audio, 0)
    # silences at the edges are h#, AH0 the schwa ax, ER1 er; the words tier's pauses are not words
    assert u.segments == EXPECTED and u.alignment_format == "textgrid"
    assert [(w.start, w.end, w.word) for w in u.words] == [(1600, 6400, "were")]
    assert u.mapped_labels == {"silence labels mapped to h#/pau": 2, "stress digits stripped": 2,
                               "ARPAbet labels lower-cased": 1}
    # under timit39 the silences fold to sil
    u39 = SpeechReader("timit39").read(audio, 0)
    assert [s.phone for s in u39.segments] == ["sil", "w", "ah", "er", "sil"]


def test_phone_map_rules():
    m = PhoneMap("festival")
    assert [m(x, edge=False) for x in ["pau", "sp", "SIL", "spn", "AA1", "AH1", "AH0", "IY_B", "T_E", "sil_S"]] == \
        ["pau", "pau", "pau", "pau", "aa", "ah", "ax", "iy", "t", "pau"]
    assert m("", edge=True) == "h#"
    with pytest.raises(KeyError):
        m("XX1", edge=False)
    # timit61 has no brth but keeps q; Buckeye's nasal vowels and tq need its table
    m61 = PhoneMap("timit61")
    assert m61("aen", False, {"aen": "ae"}) == "ae" and m61("tq", False, {"tq": "q"}) == "q"


def test_kaldi_ctm_for_many_utterances(tmp_path):
    audio = utterance(tmp_path)
    write_utterance(tmp_path, "s1/b", [], "x")
    (tmp_path / "phones.ctm").write_text(
        "b 1 0.0 0.5 SIL\n"
        "a 1 0.00 0.10 SIL\na 1 0.10 0.10 W_B\na 1 0.20 0.10 AH0_I\na 1 0.30 0.10 ER1_E\na 1 0.40 0.10 SIL\n")
    (tmp_path / "words.ctm").write_text("a 1 0.10 0.30 were 1.00\n")
    src = AlignmentSource("ctm", phone_ctm=tmp_path / "phones.ctm", word_ctm=tmp_path / "words.ctm")
    u = SpeechReader("festival", alignments=src).read(audio, 0)
    assert u.segments == EXPECTED and [w.word for w in u.words] == ["were"] and u.alignment_format == "ctm"
    assert u.mapped_labels["Kaldi word-position suffixes stripped"] == 3
    # an utterance the CTM does not hold, integer phone ids
    write_utterance(tmp_path, "s1/c", [], "x")
    with pytest.raises(ValueError, match=r"phones\.ctm: no rows for utterance 'c'"):
        SpeechReader("festival", alignments=src).read(tmp_path / "s1" / "c.flac", 0)
    (tmp_path / "ids.ctm").write_text("a 1 0.0 0.5 17\n")
    with pytest.raises(ValueError, match=r"ids\.ctm: line 1 \(0\.000-0\.500 s\): label '17' maps to no phone .*int2sym"):
        SpeechReader("festival", alignments=AlignmentSource(phone_ctm=tmp_path / "ids.ctm")).read(audio, 0)


def test_buckeye_phones_and_words(tmp_path):
    audio = utterance(tmp_path)
    head = "signal a\ntype 0\ncolor 121\nseparator ;\nnfields 1\n#\n"
    audio.with_suffix(".phones").write_text(head + "    0.1  122 {B_TRANS}\n    0.2 122 w\n    0.3 122 aan\n"
                                            "    0.4 122 er\n    0.5 122 SIL\n")
    audio.with_suffix(".words").write_text(head + "    0.1  122 {B_TRANS}\n    0.4 122 were; w er; w er; VBD\n"
                                           "    0.5 122 <SIL>; S; S; S\n")
    u = SpeechReader("timit61").read(audio, 0)
    # {B_TRANS} is the untranscribed start: no segment, its frames ignored and counted
    assert u.segments == [Segment(1600, 3200, "w"), Segment(3200, 4800, "aa"), Segment(4800, 6400, "er"),
                          Segment(6400, N, "h#")]
    assert u.ignored == 9 and [(w.start, w.end, w.word) for w in u.words] == [(1600, 6400, "were")]


def first_line(e: pytest.ExceptionInfo) -> str:
    return str(e.value).splitlines()[0]


@pytest.mark.parametrize("phones, message", [
    ([(0.0, 0.2, "W"), (0.15, 0.5, "sil")],
     r"a\.TextGrid: tier 'phones', interval 2 \(0\.150-0\.500 s\): 'sil' overlaps the previous interval"),
    ([(0.0, 0.2, "W"), (0.25, 0.5, "sil")],
     r"a\.TextGrid: tier 'phones', interval 2 \(0\.250-0\.500 s\): gap of 800 samples before 'sil'"),
    ([(0.0, 0.2, "W"), (0.2, 0.6, "sil")],
     r"a\.TextGrid: tier 'phones', interval 2 \(0\.200-0\.600 s\): 'sil' runs past the end of the audio .*8000 "
     r"samples at 16000 Hz"),
    ([(0.0, 0.2, "W"), (0.2, 0.5, "QQ")],
     r"a\.TextGrid: tier 'phones', interval 2 \(0\.200-0\.500 s\): label 'QQ' maps to no phone of the festival set"),
])
def test_malformed_textgrid_names_file_tier_and_interval(tmp_path, phones, message):
    audio = utterance(tmp_path)
    audio.with_suffix(".TextGrid").write_text(textgrid(phones, [(0.0, 0.5, "x")]))
    with pytest.raises(ValueError) as e:
        SpeechReader("festival").read(audio, 0)
    assert re.search(message, first_line(e)), first_line(e)


def test_missing_tier_ctm_gap_and_buckeye_overlap(tmp_path):
    audio = utterance(tmp_path)
    tg = audio.with_suffix(".TextGrid")
    tg.write_text(textgrid(MFA_PHONES, None, phone_tier="segments"))
    with pytest.raises(ValueError) as e:
        SpeechReader("festival").read(audio, 0)
    assert re.search(r"a\.TextGrid: no tier 'phones' \(its tiers: 'segments'\); set the data module's phone_tier",
                     first_line(e))
    # the tier names are the config's; a TextGrid without words reads with word_tier None
    u = SpeechReader("festival", alignments=AlignmentSource(phone_tier="segments", word_tier=None)).read(audio, 0)
    assert u.segments == EXPECTED and u.words is None
    tg.unlink()
    (tmp_path / "p.ctm").write_text("a 1 0.0 0.2 SIL\na 1 0.3 0.2 SIL\n")
    with pytest.raises(ValueError) as e:
        SpeechReader("festival", alignments=AlignmentSource(phone_ctm=tmp_path / "p.ctm")).read(audio, 0)
    assert re.search(r"p\.ctm: line 2 \(0\.300-0\.500 s\): gap of 1600 samples before 'SIL'", first_line(e))
    audio.with_suffix(".phones").write_text("#\n 0.3 1 w\n 0.2 1 er\n")
    with pytest.raises(ValueError) as e:
        SpeechReader("festival").read(audio, 0)
    assert re.search(r"a\.phones: line 3 \(0\.300-0\.200 s\): 'er' ends \(sample 3200\) not after it starts",
                     first_line(e))


def test_format_detected_beside_the_audio_or_chosen(tmp_path):
    audio = utterance(tmp_path, with_phn=True)
    reader = SpeechReader("festival")
    assert reader.read(audio, 0).segments == read_phn(audio.with_suffix(".phn"), N)
    audio.with_suffix(".TextGrid").write_text(textgrid(MFA_PHONES, MFA_WORDS))
    with pytest.raises(ValueError) as e:
        reader.read(audio, 0)
    assert re.search(r"a\.flac: alignments in more than one format beside it \(a\.phn, a\.TextGrid\); set the data "
                     r"module's alignment_format to phn or textgrid", first_line(e))
    assert SpeechReader("festival", alignments=AlignmentSource("textgrid")).read(audio, 0).segments == EXPECTED
    audio.with_suffix(".phn").unlink()
    audio.with_suffix(".TextGrid").unlink()
    with pytest.raises(ValueError, match=r"a\.flac: no a\.phn next to it \(nor a\.TextGrid nor a\.phones\); every"):
        reader.read(audio, 0)
    with pytest.raises(ValueError, match="alignment_format ctm needs phone_ctm"):
        AlignmentSource("ctm")
