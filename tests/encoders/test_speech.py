"""Speech frame labeling: readers, frame-centre labels, featurizer, encoder, baselines, the
DataModule on the shipped sample, bad input. Tiny inputs; CPU only."""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from speech_corpus_helpers import TONES_MS, write_tones

from vecset.backbone import BiLSTM, VectorSet, WindowMLP
from vecset.backbone.baselines import reverse_padded
from vecset.encoders.speech import (
    FESTIVAL_PHONES,
    FRAME_LENGTH,
    FRAME_SHIFT,
    TIMIT39,
    AudioFile,
    Featurizer,
    Segment,
    SpeechEncoder,
    frame_labels,
    frames_to_segments,
    num_frames,
    read_audio,
    read_phn,
)
from vecset.pipelines.speech.data import SpeechFramesDataModule
from vecset.pipelines.speech.files import list_audio
from vecset.pipelines.speech.options import SpeechPredict, SpeechSplits

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "speech"
PH = list(FESTIVAL_PHONES)


def write_utt(d: Path, stem: str, n: int, phn: str | None, sr: int = 16000, channels: int = 1,
              fmt: str = "wav", seed: int = 0) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, channels)) * 0.1).astype(np.float32)
    path = d / f"{stem}.{fmt}"
    sf.write(path, x if channels > 1 else x[:, 0], sr, subtype="PCM_16")
    if phn is not None:
        (d / f"{stem}.phn").write_text(phn)
    return path


# --- frame-centre rule -------------------------------------------------------------------------
def test_num_frames_matches_kaldi():
    feat = Featurizer("fbank", 40)
    for n in (400, 559, 560, 16000):
        assert feat(torch.zeros(n) + 0.01).shape == (num_frames(n), 40)
    assert num_frames(399) == 0 and num_frames(560) == 2


def test_frame_centre_rule_at_boundaries():
    # frame 0 centre 200, frame 1 centre 360, frame 2 centre 520
    n = 400 + 2 * FRAME_SHIFT  # 3 frames
    # boundary exactly at frame 1's centre: frame 1 goes to the later segment
    segs = [Segment(0, 360, "aa"), Segment(360, n, "b")]
    y, ign = frame_labels(segs, 3, PH)
    assert [PH[i] for i in y] == ["aa", "b", "b"] and ign == 0
    # one sample later: frame 1's centre (360) is still inside the first segment
    segs = [Segment(0, 361, "aa"), Segment(361, n, "b")]
    y, _ = frame_labels(segs, 3, PH)
    assert [PH[i] for i in y] == ["aa", "aa", "b"]
    # a segment that holds no frame centre gets no frame
    segs = [Segment(0, 250, "aa"), Segment(250, 340, "s"), Segment(340, n, "b")]
    y, _ = frame_labels(segs, 3, PH)
    assert [PH[i] for i in y] == ["aa", "b", "b"]


def test_frames_uncovered_are_ignored_and_counted():
    segs = [Segment(300, 700, "aa")]  # frame 0 (centre 200) and frame 3 (centre 680 -> covered), 4 (840) not
    y, ign = frame_labels(segs, 5, PH)
    assert y.tolist()[0] == -100 and y.tolist()[4] == -100 and ign == 2


def test_segments_round_trip_through_the_centre_rule():
    labels = ["h#", "h#", "s", "aa", "aa", "aa", "t", "h#"]
    n = FRAME_LENGTH + (len(labels) - 1) * FRAME_SHIFT + 57
    segs = frames_to_segments(labels, n)
    assert segs[0].start == 0 and segs[-1].end == n
    assert all(a.end == b.start for a, b in zip(segs, segs[1:], strict=False))
    assert [s.phone for s in segs] == ["h#", "s", "aa", "t", "h#"]
    y, _ = frame_labels(segs, len(labels), PH)
    assert [PH[i] for i in y] == labels


# --- readers and bad input -----------------------------------------------------------------------
def test_read_phn_fold39_and_q(tmp_path):
    write_utt(tmp_path, "a", 2000, "0 800 ax\n800 1200 q\n1200 2000 h#\n")
    segs = read_phn(tmp_path / "a.phn", 2000, TIMIT39, fold39=True)
    assert [s.phone for s in segs] == ["ah", None, "sil"]
    y, ign = frame_labels(segs, num_frames(2000), TIMIT39)
    assert ign == int((y == -100).sum()) and ign >= 2  # q frames are ignored and counted
    assert len(TIMIT39) == 39


@pytest.mark.parametrize("phn, message", [
    ("0 900 aa\n800 2000 b\n", r"a\.phn:2: segment 800-2000 b overlaps the previous one, which ends at 900"),
    ("0 800 aa\n900 2000 b\n", r"a\.phn:2: gap of 100 samples"),
    ("0 800 aa\n800 2500 b\n", r"a\.phn:2: segment 800-2500 b runs past the end of the audio \(2000 samples at 16000 Hz\)"),
    ("0 800 aa\n800 2000 xx\n", r"a\.phn:2: phone 'xx' is not in the phone set"),
    ("0 800\n", r"a\.phn:1: expected 'start_sample end_sample phone'"),
])
def test_bad_phn_names_file_and_line(tmp_path, phn, message):
    write_utt(tmp_path, "a", 2000, phn)
    with pytest.raises(ValueError, match=message):
        read_phn(tmp_path / "a.phn", 2000, PH)


def test_unreadable_and_truncated_audio(tmp_path):
    bad = tmp_path / "junk.wav"
    bad.write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt garbage")
    with pytest.raises(ValueError, match=r"junk\.wav: unreadable or truncated audio"):
        read_audio(bad)
    good = write_utt(tmp_path, "cut", 4000, None)
    data = good.read_bytes()
    cut = tmp_path / "cut2.wav"
    cut.write_bytes(data[: 44 + 1000])  # header promises 4000 samples, 500 are there
    with pytest.raises(ValueError, match=r"cut2\.wav: unreadable or truncated audio"):
        read_audio(cut)


def test_empty_and_too_short_audio(tmp_path):
    empty = write_utt(tmp_path, "empty", 0, None)
    with pytest.raises(ValueError, match=r"empty\.wav: empty audio \(0 samples\)"):
        read_audio(empty)
    short = write_utt(tmp_path, "short", 399, None)
    with pytest.raises(ValueError, match=r"short\.wav: 399 samples at 16000 Hz is shorter than one 25 ms frame"):
        read_audio(short)


def test_resample_stereo_and_notice_once(tmp_path, caplog):
    d = tmp_path / "spk"
    a = write_utt(d, "a", 8000, None, sr=8000, channels=2, seed=1)
    b = write_utt(d, "b", 8000, None, sr=8000, seed=2)
    with caplog.at_level(logging.WARNING, logger="vecset.encoders.speech"):
        wa = read_audio(a).wav
        wb = read_audio(b).wav
    assert wa.shape == (16000,) and wb.shape == (16000,) and wa.dtype == np.float32
    notices = [r for r in caplog.records if "resampling to 16000 Hz" in r.getMessage()]
    assert len(notices) == 1 and "8000 Hz" in notices[0].getMessage()
    # stereo is mixed to mono: the mean of the channels (checked at 16 kHz on a copy)
    st = write_utt(tmp_path, "st", 800, None, channels=2, seed=3)
    raw, _ = sf.read(st, dtype="float32")
    assert np.allclose(read_audio(st).wav, raw.mean(1), atol=1e-6)


def test_wav_without_phn_in_training_folder(tmp_path):
    write_utt(tmp_path / "s1", "a", 2000, "0 2000 h#\n")
    write_utt(tmp_path / "s1", "b", 2000, None)
    dm = SpeechFramesDataModule(root=str(tmp_path), splits=SpeechSplits(train="s1", val="s1", test="s1"))
    with pytest.raises(ValueError, match=r"s1/b\.wav: no b\.phn next to it"):
        dm.setup("fit")


# --- featurizer and encoder ----------------------------------------------------------------------
def test_featurizer_fbank_mfcc_shapes_and_values():
    wav = torch.from_numpy(np.sin(np.arange(4000) * 2 * np.pi * 1000 / 16000).astype(np.float32) * 0.5)
    fb = Featurizer("fbank", 80)(wav)
    assert fb.shape == (num_frames(4000), 80)
    # a 1 kHz tone: the loudest mel bin is the one whose centre is nearest 1 kHz (bin ~ 23 of 80)
    assert 18 <= int(fb.mean(0).argmax()) <= 28
    assert Featurizer("mfcc", 40, 13)(wav).shape == (num_frames(4000), 13)
    with pytest.raises(ValueError, match="features must be 'fbank' or 'mfcc'"):
        Featurizer("spectrogram")


def test_encoder_utterance_normalization_and_padding():
    torch.manual_seed(0)
    enc = SpeechEncoder(in_dim=6, d_model=8, positional="sinusoidal", conv_kernel=3).eval()
    a, b = torch.randn(5, 6) * 3 + 2, torch.randn(3, 6)
    batch = {"x": torch.zeros(2, 5, 6), "mask": torch.zeros(2, 5, dtype=torch.bool)}
    batch["x"][0], batch["x"][1, :3] = a, b
    batch["mask"][0], batch["mask"][1, :3] = True, True
    z = enc.normalize(batch["x"], batch["mask"])
    assert torch.allclose(z[0].mean(0), torch.zeros(6), atol=1e-5)
    assert torch.allclose(z[0].std(0, unbiased=False), torch.ones(6), atol=1e-4)
    out = enc(batch)
    alone = enc({"x": b[None], "mask": torch.ones(1, 3, dtype=torch.bool)})
    assert torch.allclose(out.x[1, :3], alone.x[0], atol=1e-5)  # padding changes no real frame
    assert out.x[1, 3:].abs().sum() == 0
    with pytest.raises(ValueError, match="expects 6 features per frame, got 5"):
        enc({"x": torch.zeros(1, 3, 5), "mask": torch.ones(1, 3, dtype=torch.bool)})


def test_encoder_global_stats_and_specaugment():
    torch.manual_seed(0)
    enc = SpeechEncoder(in_dim=4, d_model=8, normalization="global", freq_mask_param=2, time_mask_param=3)
    batch = {"x": torch.randn(2, 20, 4) + 5, "mask": torch.ones(2, 20, dtype=torch.bool)}
    with pytest.raises(ValueError, match="has no statistics"):
        enc(batch)
    enc.set_global_stats([batch["x"][0], batch["x"][1]])
    z = enc.normalize(batch["x"], batch["mask"])
    assert torch.allclose(z.reshape(-1, 4).mean(0), torch.zeros(4), atol=1e-5)
    aug = enc.spec_augment(torch.ones(2, 20, 4))
    assert (aug == 0).any() and ((aug == 0) | (aug == 1)).all()  # masks set values to 0
    enc.eval()
    assert torch.equal(enc(batch).x, enc(batch).x)  # no masking at evaluation


# --- baselines -----------------------------------------------------------------------------------
def test_bilstm_equals_packed_bidirectional_lstm():
    torch.manual_seed(0)
    D, H, L = 6, 5, 2
    ours = BiLSTM(D, hidden=H, layers=L).eval()
    ref = torch.nn.LSTM(D, H, num_layers=L, bidirectional=True, batch_first=True)
    with torch.no_grad():
        for i in range(L):
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(ours.fwd[i], f"{name}_l0").copy_(getattr(ref, f"{name}_l{i}"))
                getattr(ours.bwd[i], f"{name}_l0").copy_(getattr(ref, f"{name}_l{i}_reverse"))
    x = torch.randn(3, 7, D)
    lengths = torch.tensor([7, 4, 1])
    mask = torch.arange(7)[None] < lengths[:, None]
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    want, _ = torch.nn.utils.rnn.pad_packed_sequence(ref(packed)[0], batch_first=True, total_length=7)
    got = []
    hook = ours.proj.register_forward_hook(lambda m, inp, out: got.append(inp[0]))
    ours(VectorSet(x=x, mask=mask))
    hook.remove()
    assert torch.allclose(got[0] * mask[..., None], want, atol=1e-6)


def test_reverse_padded():
    x = torch.arange(10.0).reshape(2, 5, 1)
    r = reverse_padded(x, torch.tensor([5, 3]))
    assert r[:, :, 0].tolist() == [[4, 3, 2, 1, 0], [7, 6, 5, 8, 9]]


def test_window_mlp_context_and_padding():
    torch.manual_seed(0)
    mlp = WindowMLP(4, context=2, hidden=16).eval()
    x = torch.randn(1, 9, 4)
    full = mlp(VectorSet(x=x, mask=torch.ones(1, 9, dtype=torch.bool))).x
    x2 = x.clone()
    x2[0, 8] += 10  # frame 8 is outside frame 5's window (5 +- 2), inside frame 6's
    out2 = mlp(VectorSet(x=x2, mask=torch.ones(1, 9, dtype=torch.bool))).x
    assert torch.allclose(full[0, :6], out2[0, :6]) and not torch.allclose(full[0, 6], out2[0, 6])
    # padding behaves like the zeros past the end
    pad = torch.cat([x[:, :6], torch.randn(1, 3, 4)], 1)
    m = torch.tensor([[True] * 6 + [False] * 3])
    short = mlp(VectorSet(x=x[:, :6], mask=torch.ones(1, 6, dtype=torch.bool))).x
    assert torch.allclose(mlp(VectorSet(x=pad, mask=m)).x[0, :6], short[0], atol=1e-6)


# --- the shipped sample and the DataModule ----------------------------------------------------------
def test_shipped_sample_is_speaker_disjoint_and_valid():
    lists = {s: (SAMPLE / f"{s}.lst").read_text().split() for s in ("train", "dev", "test")}
    spk = {s: {u.split("/")[0] for u in v} for s, v in lists.items()}
    assert not (spk["train"] & spk["test"]) and not (spk["train"] & spk["dev"]) and not (spk["dev"] & spk["test"])
    size = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert size <= 15_000_000
    utt = SAMPLE / lists["test"][0]
    n = sf.info(str(utt) + ".flac").frames
    segs = read_phn(str(utt) + ".phn", n, PH)  # contiguous, in the phone set
    assert segs[0].start == 0 and segs[-1].end == n and segs[0].phone == "h#" == segs[-1].phone


def test_datamodule_on_sample(tmp_path):
    dm = SpeechFramesDataModule(root=str(SAMPLE), batch_size=2, splits=SpeechSplits(max_utterances=2))
    dm.setup("test")
    batch = next(iter(dm.test_dataloader()))
    B, T, F = batch["x"].shape
    assert B == 2 and F == 40 and batch["y"].shape == (B, T)
    assert dm.num_classes == 50
    # the shipped 16 kHz sample's frames and labels, pinned (values of the WordNet-sentence sample of
    # issue #16, read before any change to features or labels; the old grammar sample's were
    # u00009 81946 samples (510, 40) 3d356c5406325a0c, u00021 39355 (244, 40) 701df63f878971a5)
    import hashlib

    got = [(u.path.name, u.samples, tuple(u.x.shape), hashlib.sha256(u.y.numpy().tobytes()).hexdigest()[:16],
            float(u.x.double().sum())) for u in dm.sets["test"].items]
    assert [g[:4] for g in got] == [("u00009.flac", 41622, (258, 40), "57d93f71856f84e2"),
                                    ("u00024.flac", 41622, (258, 40), "e8b752906d714100")]
    assert [g[4] for g in got] == pytest.approx([158180.1077361107, 158295.1657755375], rel=1e-6)
    u = dm.sets["test"].items[0]
    assert dm.audio_file(u.id) == AudioFile(u.path, 16000, 41622, 258) and dm.describe(u.id) == str(u.path)


def test_predict_paths_need_no_phn(tmp_path):
    shutil.copy(next(SAMPLE.glob("s09kal/*.flac")), tmp_path / "x.flac")
    dm = SpeechFramesDataModule(root=str(SAMPLE), predict=SpeechPredict(paths=[str(tmp_path)]))
    dm.setup("predict")  # read in chunks (predict_chunk_frames): the header now, the frames later
    ((sid, rec),) = dm.recordings.items()
    assert rec.path == tmp_path / "x.flac" and dm.audio_file(sid).frames == rec.frames
    with pytest.raises(RuntimeError, match=r"planned when vecset\.pipelines\.predict\.PredictionWriter \(which `vecset predict` adds\) asks"):
        dm.predict_dataloader()  # without the predict side, which knows the model's receptive field
    whole = SpeechFramesDataModule(root=str(SAMPLE), predict=SpeechPredict(paths=[str(tmp_path)], chunk_frames=0))
    whole.setup("predict")
    item = whole.predict_dataloader().dataset[0]
    assert "y" not in item and item["x"].shape == (rec.frames, 40)


# --- the CLI end to end: fit (with reports and plots), then predict on an audio file -------------
def test_cli_fit_and_predict(tmp_path, monkeypatch):
    import json

    from vecset.pipelines.cli import run_cli

    repo = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(tmp_path)
    cfg = str(repo / "configs" / "speech_frames_debug.yaml")
    run_cli(["fit", "--config", cfg, "--data.root", str(SAMPLE)])
    run_dir = tmp_path / "runs" / "speech_frames_debug" / "version_0"
    results = json.loads((run_dir / "results.json").read_text())
    assert 0.0 <= results["test"]["test_acc"] <= 1.0
    report = json.loads((run_dir / "test_per_phone.json").read_text())
    # the per-phone report scores the same frames as the test metric (best checkpoint = last: 1 epoch)
    assert abs(report["frame_accuracy"] - results["test"]["test_acc"]) < 1e-3
    assert sum(r["frames"] for r in report["per_phone"]) == report["frames"] > 0
    for name in ("speech_segments.png", "attention.png", "test_per_phone.csv"):
        assert (run_dir / name).stat().st_size > 0
    # global normalization statistics were fitted and saved with the model
    ckpt = torch.load(results["checkpoint"], map_location="cpu", weights_only=False)
    assert bool(ckpt["state_dict"]["encoder.stats_fitted"])
    wav = tmp_path / "one.flac"
    shutil.copy(next(SAMPLE.glob("s10ked/*.flac")), wav)
    run_cli(["predict", "--config", cfg, "--data.root", str(SAMPLE), "--ckpt_path", results["checkpoint"],
             "--data.predict.paths", f"[{wav}]"])
    phn = tmp_path / "runs" / "speech_frames_debug" / "version_1" / "predictions" / f"{tmp_path.name}_one.phn"
    segs = read_phn(phn, sf.info(str(wav)).frames, PH)  # contiguous, covers the file, valid phones
    assert segs[0].start == 0 and segs[-1].end == sf.info(str(wav)).frames
    # the config's segment decoder wrote the .phn: its frame labels are the .frames' last column
    index = (phn.parents[1] / "predictions.csv").read_text().splitlines()
    assert index[0] == "input,frames,segments,segments_from,phn" and index[1].split(",")[3] == "decoder"
    rows = [ln.split() for ln in phn.with_suffix(".frames").read_text().splitlines()[1:]]
    assert all(len(r) == 5 for r in rows)
    assert frame_labels(segs, len(rows), PH)[0].tolist() == [PH.index(r[4]) for r in rows]
    # argmax merging instead; and the decoder's settings are decode settings: the config's apply
    run_cli(["predict", "--config", cfg, "--data.root", str(SAMPLE), "--ckpt_path", results["checkpoint"],
             "--data.predict.paths", f"[{wav}]", "--data.predict.segments", "argmax",
             "--model.init_args.head.init_args.decoder.init_args.switch_penalty", "0.5"])
    index2 = (tmp_path / "runs" / "speech_frames_debug" / "version_2" / "predictions.csv").read_text().splitlines()
    assert index2[1].split(",")[3] == "argmax"
    import yaml

    used = yaml.safe_load((tmp_path / "runs" / "speech_frames_debug" / "version_2" / "config.yaml").read_text())
    assert used["model"]["init_args"]["head"]["init_args"]["decoder"]["init_args"] == {"switch_penalty": 0.5,
                                                                                     "min_duration": 3}
    # the test report has the segment and word scores
    assert report["segment_decoder"] == "SegmentDecoder(switch_penalty=3.0, min_duration=3)"
    assert {"argmax", "decoder"} <= set(report["segments"]) and report["words"]["test_word_tokens"] > 0


def test_speech_encoder_window_must_be_at_least_one():
    with pytest.raises(ValueError, match=r"window must be >= 1 \(each frame sees \+-window frames\) or None, got 0"):
        SpeechEncoder(40, 8, window=0)


# --- audio at another sample rate: a .phn counts the audio file's own samples (TIMIT's convention) ---
def tones_labels() -> list[str]:
    """The frame-centre rule applied by hand: frame t (centre 12.5 + 10 t ms) takes the segment holding it."""
    T = num_frames(TONES_MS[-1][1] * 16)
    return [next(ph for a, b, ph, _ in TONES_MS if a <= 12.5 + 10 * t < b) for t in range(T)]


@pytest.mark.parametrize("sr", [8000, 22050, 44100])
def test_phn_at_the_files_own_rate_gives_the_same_frame_labels(tmp_path, sr):
    labels = {}
    for rate in (16000, sr):
        write_tones(tmp_path / str(rate) / "spk", "a", rate)
        dm = SpeechFramesDataModule(root=str(tmp_path / str(rate)), splits=SpeechSplits(train="spk", val="spk", test="spk"))
        dm.setup("test")
        item = dm.sets["test"].items[0]
        assert item.ignored == 0
        assert item.samples == TONES_MS[-1][1] * rate // 1000 and item.sample_rate == rate  # the file's own
        labels[rate] = [PH[i] for i in item.y.tolist()]
    assert labels[sr] == labels[16000] == tones_labels()


def test_phn_tie_at_a_frame_centre_at_8khz(tmp_path):
    # a boundary exactly at frame 1's centre (22.5 ms: sample 180 at 8 kHz, 360 at 16 kHz) gives the
    # frame to the later segment at either rate
    n = {16000: 400 + 2 * FRAME_SHIFT, 8000: (400 + 2 * FRAME_SHIFT) // 2}
    for sr in (16000, 8000):
        write_utt(tmp_path / str(sr) / "spk", "a", n[sr], f"0 {360 * sr // 16000} aa\n{360 * sr // 16000} {n[sr]} b\n",
                  sr=sr)
        dm = SpeechFramesDataModule(root=str(tmp_path / str(sr)), splits=SpeechSplits(train="spk", val="spk", test="spk"))
        dm.setup("test")
        assert [PH[i] for i in dm.sets["test"].items[0].y.tolist()] == ["aa", "b", "b"]


def test_phn_past_the_end_names_the_files_rate_and_length(tmp_path):
    write_tones(tmp_path / "spk", "a", 44100, phn_end_extra=1)
    dm = SpeechFramesDataModule(root=str(tmp_path), splits=SpeechSplits(train="spk", val="spk", test="spk"))
    with pytest.raises(ValueError, match=r"spk/a\.phn:5: segment 17640-22051 h# runs past the end of the audio "
                                         r"\(22050 samples at 44100 Hz in .*spk/a\.wav\)"):
        dm.setup("test")


def test_resampling_keeps_time_and_length(tmp_path):
    # the .phn rescaling relies on torchaudio's resampling: output sample i is at time i / 16000 s
    # (no delay) and there are ceil(n * 16000 / sr) of them
    for sr, at, want in ((8000, 1000, 2000), (44100, 4410, 1600), (22050, 2205, 1600)):
        x = np.zeros(6001, dtype=np.float32)
        x[at] = 0.9
        sf.write(tmp_path / f"i{sr}.wav", x, sr, subtype="FLOAT")
        audio = read_audio(tmp_path / f"i{sr}.wav")
        assert (audio.file_rate, audio.file_samples) == (sr, 6001)
        assert len(audio.wav) == -(-6001 * 16000 // sr) and int(np.argmax(audio.wav)) == want


# --- predict on a folder: every format the reader reads; what is skipped is counted and reported ---
def test_predict_folder_reads_every_format_and_reports_skips(tmp_path, caplog):
    d = tmp_path / "in"
    x = (np.random.default_rng(0).standard_normal(16000) * 0.1).astype(np.float32)
    (d / "sub").mkdir(parents=True)
    for name, fmt in (("u_wav.wav", "WAV"), ("u_flac.flac", "FLAC"), ("u_mp3.mp3", "MP3"), ("u_ogg.ogg", "OGG"),
                      ("u_aiff.aiff", "AIFF"), ("sub/u_sph.sph", "NIST")):  # NIST SPHERE under its usual extension
        sf.write(d / name, x, 16000, format=fmt)
    (d / "u_wav.phn").write_text("0 16000 h#\n")
    (d / "notes.txt").write_text("hello")
    (d / "clip.m4a").write_bytes(b"\x00\x00\x00\x20ftypM4A ")  # a format libsndfile does not read
    dm = SpeechFramesDataModule(root=str(SAMPLE), predict=SpeechPredict(paths=[str(d)]))
    with caplog.at_level(logging.INFO, logger="vecset.pipelines.speech.files"):
        dm.setup("predict")
    got = sorted(Path(dm.describe(sid)).name for sid in dm.recordings)
    assert got == ["u_aiff.aiff", "u_flac.flac", "u_mp3.mp3", "u_ogg.ogg", "u_sph.sph", "u_wav.wav"]
    msgs = [r for r in caplog.records if "skipped" in r.getMessage()]
    assert len(msgs) == 1 and msgs[0].levelno == logging.WARNING
    assert re.search(r"6 audio files; skipped 3 other files \(1 \.m4a, 1 \.phn, 1 \.txt\)", msgs[0].getMessage())
    # training splits read the same formats, as a folder or as a list of stems
    (tmp_path / "train.lst").write_text("in/u_mp3\nin/sub/u_sph\n")
    assert [f.name for f in list_audio(tmp_path, "train.lst")] == ["u_mp3.mp3", "u_sph.sph"]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="vecset.pipelines.speech.files"):
        assert len(list_audio(tmp_path, "in/sub")) == 1
        (d / "sub" / "u_sph.phn").write_text("0 16000 h#\n")  # TIMIT's files beside an utterance: said at info
        assert len(list_audio(tmp_path, "in/sub")) == 1
    assert [r.levelno for r in caplog.records if "skipped" in r.getMessage()] == [logging.INFO]


def test_fit_max_frames_cuts_training_and_validation_only(tmp_path, capsys):
    # 1.0 s (98 frames) and 0.3 s (28 frames) utterances, both with labels on every frame
    for split, seed in (("tr", 1), ("va", 2), ("te", 3)):
        write_utt(tmp_path / split, "long", 16000, "0 8000 aa\n8000 16000 b\n", seed=seed)
        write_utt(tmp_path / split, "short", 4800, "0 4800 aa\n", seed=seed + 10)
    dm = SpeechFramesDataModule(root=str(tmp_path), splits=SpeechSplits(train="tr", val="va", test="te", fit_max_frames=50))
    dm.setup("fit")
    dm.setup("test")
    lens = {s: sorted(len(u.x) for u in dm.sets[s].items) for s in ("train", "val", "test")}
    assert lens == {"train": [28, 50], "val": [28, 50], "test": [28, num_frames(16000)]}
    assert num_frames(16000) == 98
    cut = next(u for u in dm.sets["train"].items if len(u.x) == 50)
    assert cut.y.shape == (50,) and int(cut.y[0]) == dm.class_names.index("aa")
    assert dm.audio_file(cut.id).frames == num_frames(16000)  # the file's own frames, not the cut
    out = capsys.readouterr().out
    assert "fit_max_frames=50: 1 utterances cut to their first 50 frames (48 frames left out)" in out
    with pytest.raises(ValueError, match="fit_max_frames must be >= 0"):
        SpeechFramesDataModule(splits=SpeechSplits(fit_max_frames=-1))
