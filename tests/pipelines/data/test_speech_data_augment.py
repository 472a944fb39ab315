"""SpeechFramesDataModule's training-time waveform augmentation (speed, noise): off by default and
then the loaders are the plain ones; on, each training draw is perturbed, featurized and labelled
exactly, seeded by (seed, epoch, index); validation and test never are."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from lightning_fabric.utilities.data import _set_sampler_epoch

from vecset.encoders.speech import num_frames
from vecset.pipelines.speech.data import SpeechFramesDataModule
from vecset.pipelines.speech.options import SpeechAugment, SpeechSplits
from vecset.pipelines.speech.utterances import AugmentedUtterances, SpeechUtterances

TONE = 440.0


def write_tone_corpus(root: Path, rates: tuple[int, ...] = (16000, 16000, 8000, 16000)) -> None:
    """Utterance k at rates[k]: 0.3 s silence (pau), 0.4 + 0.1 k s of a tone (aa), 0.3 s silence,
    as 16-bit WAV with its .phn in the file's samples; every utterance in train, dev and test."""
    names = []
    for k, sr in enumerate(rates):
        quiet, loud = int(0.3 * sr), int((0.4 + 0.1 * k) * sr)
        t = np.arange(loud) / sr
        wav = np.concatenate([np.zeros(quiet), 0.5 * np.sin(2 * np.pi * TONE * t), np.zeros(quiet)])
        path = root / f"s{k}" / f"u{k}"
        path.parent.mkdir(parents=True, exist_ok=True)
        sf.write(path.with_suffix(".wav"), wav.astype(np.float32), sr, subtype="PCM_16")
        path.with_suffix(".phn").write_text(f"0 {quiet} pau\n{quiet} {quiet + loud} aa\n"
                                            f"{quiet + loud} {2 * quiet + loud} pau\n")
        names.append(f"s{k}/u{k}")
    for split in ("train", "dev", "test"):
        (root / f"{split}.lst").write_text("".join(f"{n}\n" for n in names))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tones")
    write_tone_corpus(root)
    return root


@pytest.fixture(scope="module")
def corpus16k(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tones16k")
    write_tone_corpus(root, rates=(16000, 16000))
    return root


def module(root: Path, **augment) -> SpeechFramesDataModule:
    """The tone corpus's module with these ``SpeechAugment`` settings, set up for fit."""
    dm = SpeechFramesDataModule(root=str(root), batch_size=2, augment=SpeechAugment(**augment))
    dm.setup("fit")
    return dm


def batches(loader, epoch: int | None = None, seed: int = 0) -> list[dict]:
    if epoch is not None:
        _set_sampler_epoch(loader, epoch)  # what Lightning's fit loop calls at every epoch
    torch.manual_seed(seed)  # the shuffle order (RandomSampler on the global generator)
    return list(loader)


def same(a: list[dict], b: list[dict], exact: bool = True) -> bool:
    """Equal batches: labels and ids exactly, features exactly or (``exact=False``) to float
    rounding (a DataLoader worker runs torch on one thread, which can round differently)."""
    close = torch.equal if exact else lambda u, v: u.shape == v.shape and torch.allclose(u, v, rtol=1e-5, atol=1e-4)
    return len(a) == len(b) and all(
        close(x["x"], y["x"]) and torch.equal(x["y"], y["y"]) and torch.equal(x["ids"], y["ids"])
        for x, y in zip(a, b, strict=True))


def test_off_by_default_and_identity_augmentation_gives_the_plain_batches(corpus16k):
    plain = module(corpus16k)
    assert plain.wave_augment is None and type(plain.sets["train"]) is SpeechUtterances
    assert plain.sets["train"].items[0].wav is None
    # speed 1.0 without noise goes the augmented path (kept int16 waveform, featurized per draw) and must
    # give the very batches of the plain path, in the same shuffled order (exact for 16-bit files at
    # 16 kHz; a resampled file's waveform is rounded to 16 bits)
    ident = module(corpus16k, speed_factors=[1.0])
    assert isinstance(ident.sets["train"], AugmentedUtterances)
    assert same(batches(plain.train_dataloader()), batches(ident.train_dataloader(), epoch=3))


@pytest.mark.parametrize("factor", [0.9, 1.1])
def test_speed_factor_scales_the_frames_and_the_labels_exactly(corpus, factor):
    dm = module(corpus, speed_factors=[factor])
    ds = dm.sets["train"]
    for i, it in enumerate(ds.items):
        d = ds[(0, i)]
        rate = it.sample_rate
        n16 = len(it.wav)  # samples at 16 kHz
        T = num_frames(math.ceil(n16 / factor))
        assert d["x"].shape == (T, 40) and d["y"].shape == (T,)
        # the tone's segment in time, shrunk or stretched by 1/f: frame t (centre (160 t + 200) / 16000 s)
        # is aa when start / (rate f) <= centre < end / (rate f)
        quiet, loud = int(0.3 * rate), int((0.4 + 0.1 * i) * rate)
        centre = (np.arange(T) * 160 + 200) / 16000
        want = (centre >= quiet / (rate * factor)) & (centre < (quiet + loud) / (rate * factor))
        aa, pau = dm.class_names.index("aa"), dm.class_names.index("pau")
        assert torch.equal(d["y"], torch.from_numpy(np.where(want, aa, pau)))
        # and the audio agrees: frames labelled aa are the loud ones (the log energy of the frames
        # whose window lies wholly in the tone or wholly in silence)
        energy = d["x"].exp().sum(1).log()
        edge = np.abs(centre[:, None] - np.array([quiet, quiet + loud])[None] / (rate * factor)).min(1) < 0.015
        loud_frames = (energy > energy.max() - 10).numpy()
        assert (loud_frames == want)[~edge].all() and (~edge).sum() > 0.8 * T


def test_same_seed_and_epoch_repeat_another_epoch_or_seed_draws_anew(corpus):
    kw = dict(speed_factors=[0.9, 1.0, 1.1], noise_snr_db=[10.0, 30.0], noise_prob=1.0)
    a = module(corpus, **kw)
    b = module(corpus, **kw)
    e1 = batches(a.train_dataloader(), epoch=1)
    assert same(e1, batches(b.train_dataloader(), epoch=1))
    assert not same(e1, batches(a.train_dataloader(), epoch=2))
    assert not same(e1, batches(module(corpus, seed=1, **kw).train_dataloader(), epoch=1))
    # a DataLoader worker draws what the main process draws: the epoch travels in the sampler's keys
    a.num_workers = 1
    assert same(e1, batches(a.train_dataloader(), epoch=1), exact=False)
    assert not same(e1, batches(a.train_dataloader(), epoch=2), exact=False)


def test_noise_changes_the_features_not_the_labels(corpus):
    plain = module(corpus)
    noisy = module(corpus, noise_snr_db=[5.0, 5.0], noise_prob=1.0)
    p, n = plain.sets["train"][0], noisy.sets["train"][(0, 0)]
    assert torch.equal(p["y"], n["y"]) and p["x"].shape == n["x"].shape
    # 5 dB white noise (against the whole utterance's power, 0.4 of it tone) fills the silent frames (a
    # window wholly in silence: the energy floor) and raises the tone frames' by about log(9) = 2.2 nats:
    # Kaldi's pre-emphasis (0.97) keeps 3% of the 440 Hz tone's power and about 2x the white noise's
    e_plain, e_noisy = (d["x"].exp().sum(1).log() for d in (p, n))
    silent = e_plain < e_plain.min() + 1
    tone = e_plain > e_plain.max() - 1
    assert silent.sum() > 40 and tone.sum() > 30
    assert (e_noisy - e_plain)[silent].min() > 20
    assert 1.5 < (e_noisy - e_plain)[tone].mean() < 3 and (e_noisy - e_plain)[tone].max() < 4


def test_validation_and_test_are_never_augmented(corpus):
    plain = module(corpus)
    aug = module(corpus, speed_factors=[0.9], noise_snr_db=[0.0, 0.0], noise_prob=1.0)
    aug.setup("test")
    plain.setup("test")
    for split in ("val", "test"):
        assert type(aug.sets[split]) is SpeechUtterances and aug.sets[split].items[0].wav is None
    assert same(list(plain.val_dataloader()), list(aug.val_dataloader()))
    assert same(list(plain.test_dataloader()), list(aug.test_dataloader()))
    # the global normalization statistics come from the plain training frames
    for p, q in zip(plain.data_spec("fit").train_inputs, aug.data_spec("fit").train_inputs, strict=True):
        assert torch.equal(p, q)


@pytest.mark.parametrize(("kw", "message"), [
    ({"speed_factors": [0.9, 0.0]}, r"speed_factors must be a non-empty list of factors > 0"),
    ({"speed_factors": [-1.1]}, r"speed_factors must be a non-empty list of factors > 0"),
    ({"speed_factors": []}, r"speed_factors must be a non-empty list"),
    ({"speed_factors": [1.00001]}, r"speed_factors: speed factor 1.00001: .* whole number of Hz"),
    ({"noise_snr_db": [30.0, 10.0]}, r"noise_snr_db must be \[low, high\] in dB with low <= high, got \[30.0, 10.0\]"),
    ({"noise_snr_db": [10.0]}, r"noise_snr_db must be \[low, high\]"),
    ({"noise_snr_db": [10.0, 20.0], "noise_prob": 1.5}, r"noise_prob must be in \[0, 1\], got 1.5"),
    ({"noise_prob": -0.1}, r"noise_prob must be in \[0, 1\], got -0.1"),
    # 0.001 made the waveforms 1000x longer (4.7 GB for two utterances); NaN was blamed on the audio
    ({"speed_factors": [0.001]}, r"speed_factors must be factors in \[0.5, 2.0\] .*got \[0.001\]"),
    ({"speed_factors": [1.0, 3.0]}, r"speed_factors must be factors in \[0.5, 2.0\] .*got \[1.0, 3.0\]"),
    ({"speed_factors": [float("nan")]}, r"speed_factors must be factors in \[0.5, 2.0\] .*got \[nan\]"),
    ({"noise_snr_db": [float("nan"), 10.0]}, r"noise_snr_db must be finite, in \[-20.0, 100.0\] dB.*got \[nan, 10.0\]"),
    ({"noise_snr_db": [10.0, float("inf")]}, r"noise_snr_db must be finite, in \[-20.0, 100.0\] dB.*got \[10.0, inf\]"),
    ({"noise_snr_db": [-40.0, 0.0]}, r"noise_snr_db must be finite, in \[-20.0, 100.0\] dB"),
])
def test_bad_settings_name_the_argument(kw, message):
    with pytest.raises(ValueError, match=message):
        SpeechFramesDataModule(augment=SpeechAugment(**kw))


def test_lightning_fit_draws_with_each_epochs_number(corpus16k, monkeypatch):
    """In a real fit, Lightning's loop sets the sampler's epoch, so epoch e draws with keys (e, i)."""
    import pytorch_lightning as pl

    dm = module(corpus16k, speed_factors=[0.9, 1.1])
    seen = []
    draw = AugmentedUtterances.__getitem__
    monkeypatch.setattr(AugmentedUtterances, "__getitem__", lambda self, key: seen.append(key) or draw(self, key))

    class Tiny(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(()))

        def training_step(self, batch, i):
            return self.w * batch["x"].mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    trainer = pl.Trainer(max_epochs=3, limit_val_batches=0, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Tiny(), train_dataloaders=dm.train_dataloader())
    assert sorted(seen) == [(e, i) for e in range(3) for i in range(2)]


def test_fit_max_frames_with_augmentation_is_an_error():
    with pytest.raises(ValueError, match=r"splits.fit_max_frames cannot be combined with augment \(speed_factors"):
        SpeechFramesDataModule(splits=SpeechSplits(fit_max_frames=200), augment=SpeechAugment(speed_factors=[0.9, 1.0, 1.1]))


VOICE = {"vtlp": {"p": 1.0, "alpha": [1.1, 1.1]}, "pitch": {"p": 1.0, "semitones": [2.0, 2.0]},
         "reverb": {"p": 1.0}, "telephone": {"p": 1.0}, "noise": {"p": 1.0, "snr_db": [20.0, 20.0]}}


def test_voice_augment_changes_the_features_not_the_labels_and_repeats(corpus16k, caplog):
    plain = module(corpus16k)
    with caplog.at_level("INFO", logger="vecset.pipelines.speech.data"):
        voiced = module(corpus16k, voice=VOICE, seed=7)
    lines = [r.getMessage() for r in caplog.records if "augmented at every draw" in r.getMessage()]
    assert len(lines) == 1 and "vtlp p=1 alpha [1.1, 1.1]" in lines[0] and "telephone p=1" in lines[0]
    ds = voiced.sets["train"]
    assert isinstance(ds, AugmentedUtterances) and voiced.wave_augment is None
    for i in range(len(ds)):
        clean, drawn = plain.sets["train"][i], ds[(0, i)]
        assert drawn["x"].shape == clean["x"].shape and torch.equal(drawn["y"], clean["y"])
        assert (drawn["x"] - clean["x"]).abs().mean() > 0.5  # log-mel units: it did something
    again = module(corpus16k, voice=VOICE, seed=7).sets["train"]
    assert torch.equal(ds[(0, 0)]["x"], again[(0, 0)]["x"])
    assert not torch.equal(ds[(0, 0)]["x"], ds[(1, 0)]["x"])  # the reverb tail and the noise draw anew
    # validation and test stay plain
    voiced.setup("test")
    plain.setup("test")
    for split in ("val", "test"):
        assert type(voiced.sets[split]) is SpeechUtterances
    assert same(list(plain.val_dataloader()), list(voiced.val_dataloader()))
    assert same(list(plain.test_dataloader()), list(voiced.test_dataloader()))


@pytest.mark.parametrize(("voice", "message"), [
    ({"vtlp": {}, "echo": {"p": 0.5}}, r"voice_augment: unknown transform 'echo'; known: vtlp, pitch, reverb"),
    ({"pitch": {"p": 0.5, "range": [-2, 2]}}, r"voice_augment: pitch: unknown setting 'range'; known: p, semitones"),
    ({"reverb": {"p": 1.5}}, r"reverb: probability p must be in \[0, 1\], got 1.5"),
    ({"vtlp": {"alpha": [0.5, 1.1]}}, r"vtlp: alpha must be \[low, high\] with 0.8 <= low <= high <= 1.2"),
    ({"noise": {"colours": ["blue"]}}, r"noise: colours must be a non-empty list of white, pink, brown"),
    ({}, r"voice_augment: name at least one transform"),
])
def test_bad_voice_augment_names_the_transform(voice, message):
    with pytest.raises(ValueError, match=message):
        SpeechFramesDataModule(augment=SpeechAugment(voice=voice))
