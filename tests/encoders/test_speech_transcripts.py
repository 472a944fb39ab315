"""TIMIT .wrd files: read in order, bad lines named by file and line."""

from __future__ import annotations

import pytest

from vecset.encoders.speech import Word, read_wrd


def test_read_wrd(tmp_path):
    (tmp_path / "a.wrd").write_text("3795 8523 Every\n\n8523 16442 strange\n20000 23203 rabbit\n")
    assert read_wrd(tmp_path / "a.wrd") == [Word(3795, 8523, "Every"), Word(8523, 16442, "strange"),
                                            Word(20000, 23203, "rabbit")]  # a gap is a pause


@pytest.mark.parametrize("text,err", [
    ("0 10 a\n5 20 b\n", r"a\.wrd:2: word 5-20 b overlaps the previous one, which ends at 10"),
    ("0 10 a\n20 20 b\n", r"a\.wrd:2: word end 20 is not after its start 20"),
    ("0 10\n", r"a\.wrd:1: expected 'start_sample end_sample word', got '0 10'"),
])
def test_bad_wrd_lines_are_named(tmp_path, text, err):
    (tmp_path / "a.wrd").write_text(text)
    with pytest.raises(ValueError, match=err):
        read_wrd(tmp_path / "a.wrd")


def test_zero_length_words_are_left_out_and_named_when_asked(tmp_path):
    # Festival gives a split-off clitic no time ("0 0 's"): it lies before the previous word's end too
    (tmp_path / "a.wrd").write_text("100 900 John\n0 0 's\n900 1500 car\n")
    with pytest.raises(ValueError, match=r"a\.wrd:2: word end 0 is not after its start 0"):
        read_wrd(tmp_path / "a.wrd")
    zero: list[str] = []
    assert read_wrd(tmp_path / "a.wrd", zero_length=zero) == [Word(100, 900, "John"), Word(900, 1500, "car")]
    assert zero == [f"{tmp_path / 'a.wrd'}:2"]
    (tmp_path / "b.wrd").write_text("100 90 John\n")  # an end before the start stays an error
    with pytest.raises(ValueError, match=r"b\.wrd:1: word end 90 is not after its start 100"):
        read_wrd(tmp_path / "b.wrd", zero_length=zero)
