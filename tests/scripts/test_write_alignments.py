"""scripts/write_alignments.py writes the shipped sample's alignments (data/speech .phn/.wrd) as
TextGrid (long and short, the .phn's labels or MFA's ARPAbet), Kaldi CTM and Buckeye .phones/.words;
the reader reads every utterance back to the same segments, frame labels and words as the .phn."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import soundfile as sf

from vecset.encoders.speech import (
    AlignmentReader,
    AlignmentSource,
    SpeechReader,
    frame_labels,
    num_frames,
    phone_names,
    read_phn,
    read_wrd,
)

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "write_alignments.py"
spec = importlib.util.spec_from_file_location("write_alignments", SCRIPT)
write_alignments = importlib.util.module_from_spec(spec)
sys.modules["write_alignments"] = write_alignments
spec.loader.exec_module(write_alignments)
SAMPLE = SCRIPT.parents[1] / "data" / "speech"


@pytest.fixture(scope="module")
def sample() -> list[tuple[Path, int, int]]:
    """Every utterance of the sample: (audio, samples, rate)."""
    out = []
    for audio in sorted(SAMPLE.rglob("*.flac")):
        info = sf.info(str(audio))
        out.append((audio, info.frames, info.samplerate))
    assert len(out) == 240
    return out


@pytest.mark.parametrize("fmt, labels, phone_set", [
    ("textgrid", "same", "festival"), ("textgrid-short", "same", "festival"), ("textgrid", "mfa", "festival"),
    ("textgrid", "mfa", "timit39"), ("ctm", "same", "festival"), ("ctm", "mfa", "timit61"),
    ("buckeye", "same", "festival"),
])
def test_every_utterance_round_trips(tmp_path, sample, fmt, labels, phone_set):
    write_alignments.main([str(SAMPLE), str(tmp_path), "--format", fmt, "--labels", labels])
    ctm = fmt == "ctm"
    src = AlignmentSource(phone_ctm=tmp_path / "phones.ctm" if ctm else None,
                          word_ctm=tmp_path / "words.ctm" if ctm else None)
    reader, names = AlignmentReader(src, phone_set), phone_names(phone_set)
    formats, mapped = set(), 0
    for audio, n, rate in sample:
        copy = tmp_path / audio.relative_to(SAMPLE)
        assert not copy.with_suffix(".phn").exists()
        found, path = reader.find(copy)
        al = reader.read(copy, n, rate, found, path)
        formats.add(found)
        mapped += sum(al.mapped.values())
        ref = read_phn(audio.with_suffix(".phn"), n, names, fold39=phone_set == "timit39", sample_rate=rate)
        T = num_frames(n)
        assert al.segments == ref, audio
        assert frame_labels(al.segments, T, names, sample_rate=rate)[0].tolist() == \
            frame_labels(ref, T, names, sample_rate=rate)[0].tolist()
        words = [(w.start, w.end, w.word) for w in read_wrd(audio.with_suffix(".wrd"), [])]
        assert [(w.start, w.end, w.word) for w in al.words] == words, audio
    assert formats == {"ctm" if ctm else fmt.split("-")[0]}
    # MFA's labels were mapped (ARPAbet, stress, silences), the .phn's own ones were taken as they are
    assert (mapped > 0) == (labels == "mfa")


def test_the_reader_gives_the_same_utterance(tmp_path):
    """The whole reader (features, labels, words, sentence) from a TextGrid copy of the sample."""
    write_alignments.main([str(SAMPLE), str(tmp_path), "--format", "textgrid", "--labels", "mfa"])
    reader = SpeechReader("festival")
    for rel in ["s00kal/u00000.flac", "s11slt/u00086.flac"]:
        a, b = reader.read(SAMPLE / rel, 0), reader.read(tmp_path / rel, 0)
        assert (b.alignment_format, a.alignment_format) == ("textgrid", "phn")
        assert b.x.equal(a.x) and b.y.equal(a.y) and b.segments == a.segments and b.ignored == a.ignored
        assert b.words == a.words and b.transcript == a.transcript and b.mapped_labels and not a.mapped_labels
