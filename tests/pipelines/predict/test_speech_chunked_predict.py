"""vecset predict on long recordings in chunks: the chunked output equals the whole file's."""

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from pytorch_lightning import Trainer

from vecset.backbone import Backbone
from vecset.backbone.baselines import BiLSTM, WindowMLP
from vecset.encoders.collate import pad_sets
from vecset.encoders.speech import (
    Featurizer,
    SpeechEncoder,
    phone_names,
    read_audio,
    read_frames,
    recording_info,
    recording_stats,
)
from vecset.heads import LabelingHead, SegmentDecoder
from vecset.pipelines.predict import PredictionWriter
from vecset.pipelines.speech.chunks import ChunkBatches, chunk_loader, plan_chunks
from vecset.pipelines.speech.data import SpeechFramesDataModule
from vecset.pipelines.speech.options import SpeechPredict
from vecset.pipelines.training.receptive_field import receptive_field
from vecset.pipelines.training.task import TaskModule

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "speech"
CHUNK = 450  # frames: the long recording below (2,877 frames) is 7 chunks, the last of 177; the short one 1


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """A 28.8 s recording (sample utterances end to end, cut to 2,877 frames: 400 + 2,876 x 160
    samples) and a short one."""
    d = tmp_path_factory.mktemp("long")
    files = sorted(SAMPLE.glob("*/*.flac"))
    x = np.concatenate([sf.read(f, dtype="int16")[0] for f in files[:12]])
    assert len(x) >= 400 + 2876 * 160, "the shipped sample's first 12 utterances are shorter than 28.8 s"
    x = x[:400 + 2876 * 160]
    sf.write(d / "long.flac", x, 16000)
    sf.write(d / "short.flac", sf.read(files[7], dtype="int16")[0], 16000)
    return d / "long.flac", d / "short.flac"


def model(kind: str) -> TaskModule:
    torch.manual_seed(0)
    d = 16
    if kind == "truncated":  # the speech config's kind: encoder conv, windowed blocks with convolution modules
        enc = SpeechEncoder(40, d, normalization="utterance", positional="sinusoidal", conv_kernel=5)
        bb = Backbone(d, depth=2, heads=2, mlp_ratio=2.0, window=4, conv_kernel=7, relative_positions=3)
    elif kind == "encoder_window":  # the window set by the encoder, learned positions, global statistics
        enc = SpeechEncoder(40, d, normalization="global", positional="learned", max_len=4000, window=3)
        enc.set_global_stats([torch.randn(50, 40) * 3 + 5])
        bb = Backbone(d, depth=3, heads=2, mlp_ratio=2.0)
    elif kind == "mlp":
        enc = SpeechEncoder(40, d, normalization="utterance", positional="none", conv_kernel=3)
        bb = WindowMLP(d, context=5, hidden=32)
    else:
        raise ValueError(kind)
    return TaskModule(enc, bb, LabelingHead(d, 50)).eval()


def as_dtype(batch: dict, dtype: torch.dtype) -> dict:
    return {k: v.to(dtype) if torch.is_tensor(v) and v.is_floating_point() else v for k, v in batch.items()}


def whole_probs(m: TaskModule, path: Path) -> torch.Tensor:
    x = Featurizer()(torch.from_numpy(read_audio(path).wav))  # (T, F)
    batch = as_dtype(pad_sets([{"x": x, "id": 0}]), next(m.parameters()).dtype)
    with torch.no_grad():
        return m(batch)[0].softmax(-1)  # (T, C)


def chunked_probs(m: TaskModule, paths: list[Path], context: int | None, batch_size: int = 2, chunk: int = CHUNK,
                  batches: list | None = None) -> dict:
    dm = SpeechFramesDataModule(root=str(SAMPLE), batch_size=batch_size, predict=SpeechPredict(paths=[str(p) for p in paths], chunk_frames=chunk))
    dm.setup("predict")
    loader = chunk_loader(dm.recordings, dm.featurizer, chunk, context, m.encoder.normalizes_per_set, batch_size)
    out: dict[int, list] = {}
    with torch.no_grad():
        for batch in loader:
            if batches is not None:
                batches.append(batch["ids"].tolist())
            p = m(as_dtype(batch, next(m.parameters()).dtype)).softmax(-1)  # (B, N, C)
            for i, sid in enumerate(batch["ids"].tolist()):
                a, b = batch["keep"][i].tolist()
                out.setdefault(sid, []).append(p[i, a:b])
    return {dm.audio_file(sid).path.name: torch.cat(v) for sid, v in out.items()}


def test_block_features_and_streamed_statistics_equal_the_whole_files(recordings):
    long, _ = recordings
    fe = Featurizer()
    whole = fe(torch.from_numpy(read_audio(long).wav))  # (2877, 40)
    rec = recording_info(long)
    assert rec.frames == whole.shape[0] == 2877
    blocks = torch.cat([read_frames(rec, s, min(rec.frames, s + 97), fe) for s in range(0, rec.frames, 97)])
    torch.testing.assert_close(blocks, whole, rtol=0, atol=1e-5)
    mean, std = recording_stats(rec, fe, 250)
    x = whole.double()
    torch.testing.assert_close(mean, x.mean(0), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(std, x.std(0, unbiased=False), rtol=1e-10, atol=1e-10)


def test_receptive_field_comes_from_the_parts():
    m = model("truncated")  # encoder conv 5 -> 2; per block window 4 + conv 7 // 2 = 7; depth 2
    assert receptive_field(m.encoder, m.backbone, m.head) == 2 + 2 * (4 + 3)
    m = model("encoder_window")  # the encoder's window 3 over 3 blocks without their own
    assert receptive_field(m.encoder, m.backbone, m.head) == 0 + 3 * 3
    assert m.backbone.receptive_field() is None  # its own blocks have no window: unbounded
    m = model("mlp")
    assert receptive_field(m.encoder, m.backbone, m.head) == 1 + 5
    assert receptive_field(m.encoder, BiLSTM(16, 8, 1), m.head) is None
    assert Backbone(16, depth=2, heads=2, window=4, cls_token=False).receptive_field() == 8


def test_plan_covers_every_frame_once_with_context_at_the_edges():
    chunks = plan_chunks(7, 2877, 300, 16)
    assert len(chunks) == 10 and all(c.chunks == 10 for c in chunks)
    assert [(c.start, c.end) for c in chunks][0] == (0, 300) and (chunks[-1].start, chunks[-1].end) == (2700, 2877)
    assert all(a.end == b.start for a, b in zip(chunks, chunks[1:], strict=False))
    assert (chunks[0].lo, chunks[0].hi) == (0, 316) and (chunks[-1].lo, chunks[-1].hi) == (2684, 2877)
    assert (chunks[4].lo, chunks[4].hi) == (1184, 1516)
    assert plan_chunks(0, 120, 300, 16) == [plan_chunks(0, 120, 300, 16)[0]]  # one chunk, no context
    assert (plan_chunks(0, 120, 300, 16)[0].lo, plan_chunks(0, 120, 300, 16)[0].hi) == (0, 120)


@pytest.mark.parametrize("kind", ["truncated", "encoder_window", "mlp"])
def test_chunked_output_equals_the_whole_file(recordings, kind):
    long, short = recordings
    m = model(kind)
    rf = receptive_field(m.encoder, m.backbone, m.head)
    # the short file is one chunk, in a batch with a chunk of the long one (the order: long first)
    got = chunked_probs(m, [long, short], rf, batch_size=3)
    for path in (long, short):
        want = whole_probs(m, path)
        assert got[path.name].shape == want.shape
        torch.testing.assert_close(got[path.name], want, rtol=0, atol=2e-5)


def test_batches_hold_at_most_a_chunks_frames_and_mix_a_short_file_with_a_tail_chunk(recordings):
    """Chunk 2800 frames: the long file is 2,800 + 77 frames (its tail chunk 93 with context),
    batched with the short file (407 frames, one chunk, its own statistics filled in by the
    collate); the outputs still equal the whole files'."""
    long, short = recordings
    m = model("truncated")
    rf = receptive_field(m.encoder, m.backbone, m.head)
    batches: list = []
    got = chunked_probs(m, [long, short], rf, batch_size=8, chunk=2800, batches=batches)
    assert batches == [[0], [0, 1]]  # 2816 frames alone; then 93 + 407 <= 2800 + 2 x 16
    for path in (long, short):
        torch.testing.assert_close(got[path.name], whole_probs(m, path), rtol=0, atol=2e-5)
    assert ChunkBatches([316, 332, 120, 50, 40], 332, 3).batches == [[0], [1], [2, 3, 4]]
    assert ChunkBatches([100] * 5, 1000, 2).batches == [[0, 1], [2, 3], [4]]
    assert ChunkBatches([500], 300, 4).batches == [[0]]  # a longer chunk alone


@pytest.mark.parametrize("kind", ["truncated", "encoder_window", "mlp"])
def test_the_receptive_field_is_what_makes_it_exact(recordings, kind):
    """In float64: with the receptive field as context the chunks give the whole file's output
    to 1e-12; one frame less changes it (the farthest frame's influence is small through
    random weights, about 1e-7 here, but far above float64 noise)."""
    long, _ = recordings
    m = model(kind).double()
    rf = receptive_field(m.encoder, m.backbone, m.head)
    want = whole_probs(m, long)
    exact = (chunked_probs(m, [long], rf)["long.flac"] - want).abs().max()
    short = (chunked_probs(m, [long], rf - 1)["long.flac"] - want).abs().max()
    assert exact < 1e-12 < 1e-9 < short


def test_full_attention_refuses_a_recording_longer_than_a_chunk(recordings):
    long, short = recordings
    torch.manual_seed(0)
    m = TaskModule(SpeechEncoder(40, 16, positional="none"), Backbone(16, depth=1, heads=2), LabelingHead(16, 50))
    assert receptive_field(m.encoder, m.backbone, m.head) is None
    with pytest.raises(ValueError, match=r"long\.flac: 2877 frames is longer than predict\.chunk_frames=450.*"
                                         r"predict\.chunk_frames 0"):
        chunked_probs(m, [long], None)
    got = chunked_probs(m.eval(), [short], None)  # one chunk: the whole file
    torch.testing.assert_close(got["short.flac"], whole_probs(m, short), rtol=0, atol=2e-5)


@pytest.mark.parametrize("decoder", [None, SegmentDecoder(3.0, 3)], ids=["argmax", "decoder"])
def test_written_phn_and_frames_of_a_long_file_equal_the_whole_files(recordings, tmp_path, decoder):
    """With the segment decoder the chunks' log-posteriors feed one decode per recording in
    order: its segments equal the whole file's decode exactly (decoding each chunk on its own,
    with its context, gave other segments at a chunk boundary of this recording)."""
    long, short = recordings
    m = model("truncated")
    m.head.decoder = decoder
    out = {}
    for chunk in (CHUNK, 0):
        dm = SpeechFramesDataModule(root=str(SAMPLE), batch_size=2, predict=SpeechPredict(paths=[str(long), str(short)], chunk_frames=chunk))
        trainer = Trainer(accelerator="cpu", logger=False, callbacks=[PredictionWriter()], enable_progress_bar=False,
                          enable_model_summary=False, default_root_dir=tmp_path / str(chunk))
        assert trainer.predict(m, datamodule=dm) is None  # streamed: Lightning keeps no copy
        out[chunk] = tmp_path / str(chunk) / "predictions"
    for name in ("long", "short"):
        phn = {c: (out[c] / f"{long.parent.name}_{name}.phn").read_text() for c in out}
        assert phn[CHUNK] == phn[0] and len(phn[0].splitlines()) > (10 if name == "long" else 3)
        frames = {c: [ln.split() for ln in (out[c] / f"{long.parent.name}_{name}.frames").read_text().splitlines()[1:]]
                  for c in out}
        assert len(frames[CHUNK]) == len(frames[0]) == (2877 if name == "long" else len(frames[0]))
        assert [f[:3] for f in frames[CHUNK]] == [f[:3] for f in frames[0]]  # frame, centre, label
        assert [f[4:] for f in frames[CHUNK]] == [f[4:] for f in frames[0]]  # the decoder's label
        assert len(frames[0][0]) == (5 if decoder else 4)
        probs = np.array([[float(f[3]) for f in frames[c]] for c in (CHUNK, 0)])
        assert np.abs(probs[0] - probs[1]).max() <= 1e-4 + 1e-9  # printed to 4 decimals
        if decoder is not None:  # and both are the decode of the whole file's logits
            path = long if name == "long" else short
            x = Featurizer()(torch.from_numpy(read_audio(path).wav))
            with torch.no_grad():
                logits = m(pad_sets([{"x": x, "id": 0}]))[0]  # (T, C)
            assert [f[4] for f in frames[0]] == [phone_names("festival")[j] for j in decoder(logits).tolist()]


def test_a_multitask_model_predicts_its_speech_task_in_chunks_as_the_single_task_one(recordings, tmp_path):
    """The predict side asks the predicted task's parts (a TaskView) for the receptive field, the
    per-recording statistics and the decoder: the multi-task files equal the single-task ones."""
    from vecset.encoders import VectorEncoder
    from vecset.heads import SequenceHead
    from vecset.pipelines.data.synthetic import SyntheticSetDataModule
    from vecset.pipelines.training.multitask import MultiTaskDataModule, MultiTaskModule

    long, short = recordings
    single = model("truncated")
    single.head.decoder = SegmentDecoder(3.0, 3)
    multi = MultiTaskModule(single.backbone, {"speech": single.encoder, "sets": VectorEncoder(2, 16)},
                            {"speech": single.head, "sets": SequenceHead(16, 1, task="regression")}).eval()
    out = {}
    for name, m in (("single", single), ("multi", multi)):
        speech = SpeechFramesDataModule(root=str(SAMPLE), batch_size=2, predict=SpeechPredict(paths=[str(long), str(short)], chunk_frames=CHUNK))
        dm = speech if name == "single" else MultiTaskDataModule(
            {"speech": speech, "sets": SyntheticSetDataModule(n_test=4)}, predict_task="speech")
        trainer = Trainer(accelerator="cpu", logger=False, callbacks=[PredictionWriter()], enable_progress_bar=False,
                          enable_model_summary=False, default_root_dir=tmp_path / name)
        trainer.predict(m, datamodule=dm)
        assert len(speech.chunk_loader.dataset) == 8  # 7 chunks of the long file, 1 of the short
        out[name] = {p.name: p.read_text() for p in (tmp_path / name / "predictions").iterdir()}
    d = long.parent.name
    assert sorted(out["multi"]) == [f"{d}_long.frames", f"{d}_long.phn", f"{d}_short.frames", f"{d}_short.phn"]
    assert out["multi"] == out["single"]
