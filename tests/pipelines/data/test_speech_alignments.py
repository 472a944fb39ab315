"""The speech data module reads TextGrid / CTM alignments (its alignment_format, phone_tier,
word_tier, phone_ctm, word_ctm options): a TextGrid copy of the sample (scripts/write_alignments.py)
gives the same batches as the .phn (so a seeded fit trains the same), and what the label mapping
did is reported."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from vecset.encoders.speech import AlignmentSource
from vecset.pipelines.speech.data import SpeechFramesDataModule
from vecset.pipelines.speech.options import SpeechSplits

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "data" / "speech"
spec = importlib.util.spec_from_file_location("write_alignments", ROOT / "scripts" / "write_alignments.py")
write_alignments = importlib.util.module_from_spec(spec)
sys.modules["write_alignments"] = write_alignments
spec.loader.exec_module(write_alignments)


@pytest.fixture(scope="module")
def mfa_copy(tmp_path_factory) -> Path:
    """The sample with MFA-style TextGrids (ARPAbet with stress, empty silences) instead of .phn/.wrd."""
    out = tmp_path_factory.mktemp("mfa")
    write_alignments.main([str(SAMPLE), str(out), "--format", "textgrid", "--labels", "mfa"])
    return out


def batches(dm: SpeechFramesDataModule, split: str) -> list[dict]:
    loader = {"train": dm.train_dataloader, "val": dm.val_dataloader}[split]()
    torch.manual_seed(0)  # the training loader shuffles: the same draw for both
    return list(loader)


def test_textgrid_corpus_gives_the_same_batches(mfa_copy, capsys):
    a = SpeechFramesDataModule(root=str(SAMPLE), batch_size=2, splits=SpeechSplits(max_utterances=4))
    b = SpeechFramesDataModule(root=str(mfa_copy), batch_size=2, splits=SpeechSplits(max_utterances=4), alignment=AlignmentSource(format="textgrid"))
    a.setup("fit"), b.setup("fit")
    out = capsys.readouterr().out
    # what the mapping did is counted and printed, with the format
    assert "speech train: 4 utterances" in out and "alignments: 4 textgrid" in out
    assert "labels mapped to the phone set: " in out and "stress digits stripped" in out
    for split in ("train", "val"):
        for x, y in zip(batches(a, split), batches(b, split), strict=True):
            assert x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x if torch.is_tensor(x[k]))
        assert [u.words for u in a.sets[split].items] == [u.words for u in b.sets[split].items]
    # the vocabulary of the training split comes from the TextGrids' words tier
    assert a.split_vocabulary("train")[0] == b.split_vocabulary("train")[0]


def test_ctm_options_are_relative_to_the_root(tmp_path):
    write_alignments.main([str(SAMPLE), str(tmp_path), "--format", "ctm", "--labels", "mfa"])
    dm = SpeechFramesDataModule(root=str(tmp_path), splits=SpeechSplits(max_utterances=2), alignment=AlignmentSource(phone_ctm="phones.ctm", word_ctm="words.ctm"))
    ref = SpeechFramesDataModule(root=str(SAMPLE), splits=SpeechSplits(max_utterances=2))
    dm.setup("test"), ref.setup("test")
    for u, r in zip(dm.test_items(), ref.test_items(), strict=True):
        assert u.alignment_format == "ctm" and u.segments == r.segments and torch.equal(u.y, r.y)
        assert u.words == r.words
    with pytest.raises(ValueError, match="phone_ctm / word_ctm are read with alignment_format ctm"):
        SpeechFramesDataModule(alignment=AlignmentSource(format="textgrid", phone_ctm="phones.ctm"))



@pytest.mark.parametrize("fmt", ["textgrid", "textgrid-short", "ctm", "buckeye"])
def test_every_format_gives_the_phn_batches(tmp_path, fmt):
    """The sample written in each format (its own labels) gives the .phn's batches tensor for tensor:
    a seeded fit on it trains to the same frame accuracy."""
    write_alignments.main([str(SAMPLE), str(tmp_path), "--format", fmt])
    ctm = AlignmentSource(phone_ctm="phones.ctm", word_ctm="words.ctm") if fmt == "ctm" else AlignmentSource()
    a = SpeechFramesDataModule(root=str(SAMPLE), batch_size=2, splits=SpeechSplits(max_utterances=4))
    b = SpeechFramesDataModule(root=str(tmp_path), batch_size=2, splits=SpeechSplits(max_utterances=4), alignment=ctm)
    a.setup("fit"), b.setup("fit")
    assert {u.alignment_format for u in b.sets["train"].items} == {fmt.split("-")[0]}
    for split in ("train", "val"):
        for x, y in zip(batches(a, split), batches(b, split), strict=True):
            assert x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x if torch.is_tensor(x[k]))
