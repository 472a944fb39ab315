"""The shipped speech predictor (issue 60): ``vecset.pretrained("speech_frames")`` labels each
10 ms frame of a recording and merges the runs into phone segments; ``vecset predict --model
speech_frames --audio ...`` writes a TextGrid (and a CTM or .phn) per input that the project's own
reader reads back to the same frame labels. (Its card's slice and known rows:
``test_pretrained.py``'s check over every shipped model.)"""

from __future__ import annotations

import csv
import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import soundfile as sf

import vecset
from vecset.encoders.speech import AlignmentSource, SpeechReader
from vecset.pipelines.pretrained import command_main

ROOT = Path(__file__).resolve().parents[2]
WAV = "data/speech/s12kal/u00012.flac"  # a test speaker's recording (data/speech/test.lst)


@pytest.fixture(scope="module")
def predictor():
    return vecset.pretrained("speech_frames")


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = command_main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_segments_are_the_merged_runs_of_the_frame_labels(predictor):
    (row,) = predictor.predict(ROOT / WAV)
    n, rate = sf.info(ROOT / WAV).frames, sf.info(ROOT / WAV).samplerate
    assert row["error"] == "" and row["sample_rate"] == rate
    assert row["frames"] == len(row["labels"]) == 1 + (n - 400) // 160
    segs = row["segments"]
    assert segs[0][0] == 0 and segs[-1][1] == n / rate  # the whole recording, in seconds
    assert all(a[1] == b[0] and a[2] != b[2] for a, b in zip(segs, segs[1:], strict=False))  # contiguous
    # each boundary lies between two frame centres: frame t covers [t*10 + 7.5, t*10 + 17.5) ms
    runs = [lab for i, lab in enumerate(row["labels"]) if i == 0 or lab != row["labels"][i - 1]]
    assert [s[2] for s in segs] == runs and row["phones"] == " ".join(runs)
    for s in segs[1:]:
        t = round((s[0] - 0.0075) / 0.01)
        assert s[0] == pytest.approx(t * 0.01 + 0.0075) and row["labels"][t] == s[2] != row["labels"][t - 1]


def test_a_waveform_with_its_rate_is_predicted_as_its_file(predictor):
    wav, rate = sf.read(ROOT / WAV, dtype="float32")
    (from_file,) = predictor.predict(str(ROOT / WAV))
    a, b = predictor.predict([(wav, rate), wav], sample_rate=rate)
    assert a["labels"] == b["labels"] == from_file["labels"] and a["segments"] == from_file["segments"]
    rows = predictor.predict([wav, "nosuch.wav", (wav[:100], rate)], as_frame=False)
    assert rows[0]["error"].startswith("a waveform needs its sample rate")
    assert rows[1]["error"] == "nosuch.wav: no such audio file"
    assert rows[2]["error"] == "100 samples at 16000 Hz is shorter than one 25 ms frame"
    assert all(r["labels"] == "" for r in rows)
    frame = predictor.predict([str(ROOT / WAV)], as_frame=True)
    assert list(frame.columns) == ["input", "frames", "sample_rate", "phones", "segments", "labels", "error"]


def test_the_command_writes_a_textgrid_and_ctm_that_read_back_to_the_labels(predictor, tmp_path):
    (row,) = predictor.predict(str(ROOT / WAV))
    rc, out, err = run(["--model", "speech_frames", "--audio", str(ROOT / WAV), "nosuch.wav",
                        "--out", str(tmp_path / "out"), "--format", "textgrid", "ctm"])
    assert rc == 0, err
    assert err.splitlines() == ["1 of 2 inputs could not be predicted (their error column says why)"]
    listed = list(csv.DictReader(io.StringIO(out)))
    assert list(listed[0]) == ["input", "frames", "sample_rate", "phones", "files", "error"]
    tg, ctm = tmp_path / "out" / "u00012.TextGrid", tmp_path / "out" / "u00012.ctm"
    assert listed[0]["files"] == f"{tg};{ctm}" and listed[0]["phones"] == row["phones"]
    assert listed[1]["files"] == "" and listed[1]["error"] == "nosuch.wav: no such audio file"
    # the project's own readers: beside a copy of the audio, and the CTM for the corpus
    (tmp_path / "out" / "u00012.flac").write_bytes((ROOT / WAV).read_bytes())
    names = SpeechReader("festival").class_names
    for source in (AlignmentSource("textgrid", word_tier=None), AlignmentSource("ctm", phone_ctm=ctm)):
        u = SpeechReader("festival", alignments=source).read(tmp_path / "out" / "u00012.flac", 0)
        assert [names[i] for i in u.y.tolist()] == row["labels"]


def test_beside_the_input_and_never_over_a_file(tmp_path):
    audio = tmp_path / "a.flac"
    audio.write_bytes((ROOT / WAV).read_bytes())
    rc, out, err = run(["--model", "speech_frames", "--audio", str(audio)])
    assert rc == 0, err
    assert (tmp_path / "a.TextGrid").is_file() and list(csv.DictReader(io.StringIO(out)))[0]["files"] == str(
        tmp_path / "a.TextGrid")
    before = (tmp_path / "a.TextGrid").read_text()
    (tmp_path / "a.TextGrid").write_text("mine")
    rc, out, err = run(["--model", "speech_frames", "--audio", str(audio), "--format", "phn", "textgrid"])
    assert rc == 2 and out == "" and err.splitlines() == [
        f"error: {tmp_path / 'a.TextGrid'}: exists; vecset predict writes beside the input only where no such file "
        "is (it may be an alignment): give --out DIR"]
    assert (tmp_path / "a.TextGrid").read_text() == "mine" and not (tmp_path / "a.phn").exists() and before
    rc, _, err = run(["--model", "speech_frames", "--audio", str(audio), "--out", str(tmp_path / "a.TextGrid")])
    assert rc == 2 and err.splitlines() == [f"error: --out {tmp_path / 'a.TextGrid'}: a file (give the folder to "
                                            "write the files into)"]
