"""SpeechFramesDataModule names an empty split list: a fit on empty lists (a corpus whose
rotations wrote nothing) failed with Lightning's "num_samples=0"."""

from __future__ import annotations

import pytest

from vecset.pipelines.speech.data import SpeechFramesDataModule
from vecset.pipelines.speech.files import list_audio
from vecset.pipelines.speech.options import SpeechSplits


def test_an_empty_list_file_is_an_error_naming_it(tmp_path):
    (tmp_path / "train.lst").write_text("\n")
    with pytest.raises(ValueError) as e:
        list_audio(tmp_path, "train.lst")
    assert str(e.value).splitlines()[0] == (f"{tmp_path / 'train.lst'}: split 'train.lst' lists no utterances (the "
                                            f"list file is empty); expected one utterance path per line, relative "
                                            f"to {tmp_path}")


def test_the_data_module_names_the_empty_list_of_a_split(tmp_path):
    lovo = tmp_path / "lovo" / "enus"
    lovo.mkdir(parents=True)
    for name in ("train", "dev", "test"):
        (lovo / f"{name}.lst").write_text("")
    dm = SpeechFramesDataModule(root=str(tmp_path), splits=SpeechSplits(train="lovo/enus/train.lst", val="lovo/enus/dev.lst", test="lovo/enus/test.lst"))
    with pytest.raises(ValueError, match=r"lovo/enus/(train|dev)\.lst: split 'lovo/enus/(train|dev)\.lst' lists no "
                                         r"utterances \(the list file is empty\)"):
        dm.setup("fit")
