"""``vecset predict``'s speech files: the .phn from the head's segment decoder when it has one,
else from the argmax labels merged; the .frames keep the argmax and add the decoder's labels."""

from __future__ import annotations

import torch
from speech_corpus_helpers import N, write_lists, write_utterance

from vecset.encoders.speech import read_phn
from vecset.heads import LabelingHead, SegmentDecoder
from vecset.pipelines.data.speech import SpeechFramesDataModule


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
        preds = LabelingHead(8, C, decoder=decoder).predict(out, batch)
        assert preds["label"][0] == labels[0].tolist()  # the argmax either way
        rows = dm.prediction_rows(batch["ids"].tolist(), preds)
        run = tmp_path / ("decoder" if decoder else "argmax")
        dm.write_predictions(rows, run)
        segs = read_phn(run / "predictions" / "s_a.phn", N, dm.class_names)
        assert [s.phone for s in segs] == phones
        frames = (run / "predictions" / "s_a.frames").read_text().splitlines()
        assert frames[11].split()[2] == "b" and len(frames[11].split()) == (5 if decoder else 4)
        assert (run / "predictions.csv").read_text().splitlines()[1].split(",")[3] == ("decoder" if decoder else "argmax")
