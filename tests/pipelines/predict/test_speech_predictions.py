"""``vecset predict``'s speech files: the .phn from the head's segment decoder when it has one,
else from the argmax labels merged; the .frames keep the argmax and add the decoder's labels."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
import soundfile as sf
import torch
from speech_corpus_helpers import TONES_MS, N, write_lists, write_tones, write_utterance

from vecset.encoders.speech import FESTIVAL_PHONES, frame_labels, read_phn
from vecset.heads import LabelingHead, SegmentDecoder
from vecset.pipelines.speech.data import SpeechFramesDataModule
from vecset.pipelines.speech.options import SpeechPredict, SpeechSplits
from vecset.pipelines.speech.prediction_files import SpeechOutput


def test_the_phn_comes_from_the_decoder_or_the_argmax(tmp_path):
    write_utterance(tmp_path, "s/a", [], "x", phones=[(0, 4000, "h#"), (4000, N, "aa")])
    write_lists(tmp_path, train=["s/a"], dev=["s/a"], test=["s/a"])
    dm = SpeechFramesDataModule(root=str(tmp_path))
    dm.setup("test")
    batch = next(iter(dm.test_dataloader()))
    C, b = len(dm.class_names), dm.class_names.index("b")
    # logits: h# for frames 0-23, aa after, with a one-frame b flicker at frame 10
    labels = batch["y"].clone()
    labels[0, 10] = b
    out = torch.nn.functional.one_hot(labels, C).float() * 4  # (1, 48, C)
    for decoder, phones in ((SegmentDecoder(3.0, 1), ["h#", "aa"]), (None, ["h#", "b", "h#", "aa"])):
        head = LabelingHead(8, C, decoder=decoder)
        preds = head.predict(out, batch)
        assert preds["label"][0] == labels[0].tolist()  # the argmax either way
        assert ("log_prob" in preds) == (decoder is not None)  # for the predict side's decode
        run = tmp_path / ("decoder" if decoder else "argmax")
        output = SpeechOutput(dm, run, head.segment_decoder())
        output.add(batch["ids"].tolist(), preds, batch)
        assert output.close() == run / "predictions.csv"
        segs = read_phn(run / "predictions" / "s_a.phn", N, dm.class_names)
        assert [s.phone for s in segs] == phones
        frames = (run / "predictions" / "s_a.frames").read_text().splitlines()
        assert frames[11].split()[2] == "b" and len(frames[11].split()) == (5 if decoder else 4)
        assert (run / "predictions.csv").read_text().splitlines()[1].split(",")[3] == ("decoder" if decoder else "argmax")


def test_argmax_segments_even_with_a_decoder(tmp_path):
    """``predict_segments: argmax``: the .phn merges the argmax although the head has a decoder."""
    write_utterance(tmp_path, "s/a", [], "x", phones=[(0, 4000, "h#"), (4000, N, "aa")])
    write_lists(tmp_path, train=["s/a"], dev=["s/a"], test=["s/a"])
    dm = SpeechFramesDataModule(root=str(tmp_path), predict=SpeechPredict(segments="argmax"))
    dm.setup("test")
    batch = next(iter(dm.test_dataloader()))
    labels = batch["y"].clone()
    labels[0, 10] = dm.class_names.index("b")
    out = torch.nn.functional.one_hot(labels, len(dm.class_names)).float() * 4
    head = LabelingHead(8, len(dm.class_names), decoder=SegmentDecoder(3.0, 1))
    output = SpeechOutput(dm, tmp_path / "run", head.segment_decoder())
    output.add(batch["ids"].tolist(), head.predict(out, batch), batch)
    output.close()
    segs = read_phn(tmp_path / "run" / "predictions" / "s_a.phn", N, dm.class_names)
    assert [s.phone for s in segs] == ["h#", "b", "h#", "aa"]


SAMPLE = Path(__file__).resolve().parents[3] / "data" / "speech"
PH = list(FESTIVAL_PHONES)


def write_labels(dm: SpeechFramesDataModule, sids: list[int], labels: list[list[int]], out: Path) -> Path:
    """Labels written as predictions (probability 1, no decoder)."""
    output = SpeechOutput(dm, out)
    output.add(sids, {"label": labels, "prob": [[1.0] * len(y) for y in labels]}, {})
    return output.close()


def test_true_labels_written_back_give_the_same_frames(tmp_path):
    dm = SpeechFramesDataModule(root=str(SAMPLE), batch_size=2, splits=SpeechSplits(max_utterances=2))
    dm.setup("test")
    batch = next(iter(dm.test_dataloader()))
    sid, n = int(batch["ids"][0]), int(batch["mask"][0].sum())
    y = batch["y"][0, :n].tolist()
    write_labels(dm, [sid], [y], tmp_path)
    audio = dm.audio_file(sid).path
    phn = tmp_path / "predictions" / f"{audio.parent.name}_{audio.stem}.phn"
    segs = read_phn(phn, dm.audio_file(sid).samples, PH)
    assert frame_labels(segs, n, PH)[0].tolist() == y
    frames = (tmp_path / "predictions" / f"{audio.parent.name}_{audio.stem}.frames").read_text().splitlines()
    assert len(frames) == n + 1 and frames[1].split()[:2] == ["0", "200"]


@pytest.mark.parametrize("sr", [8000, 44100])
def test_predicted_phn_is_in_the_files_own_samples(tmp_path, sr):
    audio = write_tones(tmp_path / "spk", "a", sr)
    dm = SpeechFramesDataModule(root=str(tmp_path), splits=SpeechSplits(train="spk", val="spk", test="spk"))
    dm.setup("test")
    item = dm.sets["test"].items[0]
    y = item.y.tolist()
    write_labels(dm, [item.id], [y], tmp_path / "out")
    phn = tmp_path / "out" / "predictions" / "spk_a.phn"
    segs = read_phn(phn, sf.info(str(audio)).frames, PH, sample_rate=sr)
    assert segs[-1].end == sf.info(str(audio)).frames
    # each boundary is written halfway between the frame centres either side of the true one (a - 2.5 ms),
    # in the file's own samples rounded to the nearest (44.1 kHz: 2535.75 -> 2536); read back, the same frames
    bounds = [0] + [int(Fraction((2 * a - 5) * sr, 2000) + Fraction(1, 2)) for a, *_ in TONES_MS[1:]]
    assert [s.start for s in segs] == bounds and [s.phone for s in segs] == [ph for *_, ph, _ in TONES_MS]
    assert frame_labels(segs, len(y), PH, sample_rate=sr)[0].tolist() == y
    frames = (tmp_path / "out" / "predictions" / "spk_a.frames").read_text().splitlines()
    assert frames[1].split()[1] == {8000: "100", 44100: "551.25"}[sr]  # frame 0's centre, 12.5 ms
