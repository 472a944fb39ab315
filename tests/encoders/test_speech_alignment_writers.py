"""The alignment writers (``write_textgrid``, ``write_ctm``, ``write_phn``), which the speech
predictor writes its segments with: a file written from frame labels reads back through the
project's own reader (``SpeechReader.read``) to the same segments, in the file's own samples, and
the same frame labels, at 16 kHz and at a rate that is no multiple of 100 Hz."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from vecset.encoders.speech import (
    AlignmentSource,
    SpeechReader,
    frames_to_segments,
    num_frames,
    write_phn,
)
from vecset.encoders.speech.alignment_ctm import write_ctm
from vecset.encoders.speech.alignment_textgrid import read_textgrid, write_textgrid

# frame labels of a 0.5 s recording (48 frames at 16 kHz): runs of 1 to 20 frames
RUNS = [("h#", 7), ("w", 1), ("ax", 5), ("er", 20), ("pau", 2), ("b", 3), ("h#", 10)]


def recording(folder: Path, rate: int) -> tuple[Path, list[str]]:
    """A 0.5 s noise recording at ``rate`` and frame labels for each of its frames."""
    n = rate // 2
    audio = folder / "u1.wav"
    sf.write(audio, (0.01 * np.random.default_rng(0).standard_normal(n)).astype(np.float32), rate)
    labels = [lab for lab, k in RUNS for _ in range(k)]
    frames = num_frames(-(-n * 16000 // rate))  # the resampled length's frames
    labels = (labels + ["h#"] * frames)[:frames]
    return audio, labels


@pytest.mark.parametrize("rate", [16000, 44100])
@pytest.mark.parametrize("fmt", ["textgrid", "ctm", "phn"])
def test_written_segments_read_back_to_the_same_frame_labels(tmp_path, rate, fmt):
    audio, labels = recording(tmp_path, rate)
    n = rate // 2
    segs = frames_to_segments(labels, n, rate)
    seconds = [(s.start / rate, s.end / rate, s.phone) for s in segs]
    source = AlignmentSource()
    if fmt == "textgrid":
        write_textgrid(audio.with_suffix(".TextGrid"), {"phones": seconds}, n / rate)
        source = AlignmentSource(word_tier=None)
    elif fmt == "ctm":
        write_ctm(tmp_path / "phones.ctm", "u1", seconds)
        source = AlignmentSource("ctm", phone_ctm=tmp_path / "phones.ctm")
    else:
        write_phn(audio.with_suffix(".phn"), segs)
    u = SpeechReader("festival", alignments=source).read(audio, 0)
    assert u.segments == segs  # the same samples of the file, each boundary
    names = SpeechReader("festival").class_names
    assert [names[i] for i in u.y.tolist()] == labels and u.ignored == 0
    assert not u.mapped_labels  # nothing mended or mapped: the file was exact


def test_textgrid_is_praats_long_text_format_with_one_phones_tier(tmp_path):
    path = tmp_path / "a.TextGrid"
    write_textgrid(path, {"phones": [(0.0, 0.1275, "h#"), (0.1275, 0.5, "ax")]}, 0.5)
    text = path.read_text(encoding="utf-8")
    assert text.startswith('File type = "ooTextFile"\nObject class = "TextGrid"\n')
    tg = read_textgrid(path)
    (tier,) = tg["tiers"]
    assert tier["name"] == "phones" and tier["class"] == "IntervalTier"
    assert [(float(s), float(e), lab) for s, e, lab in tier["entries"]] == [(0.0, 0.1275, "h#"), (0.1275, 0.5, "ax")]
