"""The speech data module's datasets: featurized utterances, and training utterances augmented
on the fly (each draw perturbs the kept waveform: voice and channel transforms that keep every
sample in place, ``encoders/speech/voice_augment.py``, then speed and noise,
``encoders/speech/augment.py``; featurizes it and labels it from the unchanged .phn segments).

A draw is seeded from (seed, epoch, index), so a run repeats and every epoch draws anew. The epoch
travels with the index: ``EpochKeys`` (the sampler, in the main process) yields ``(epoch, index)``
keys, so DataLoader workers need no shared state. Lightning calls the sampler's ``set_epoch`` at
the start of every training epoch (``_set_sampler_epoch``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

from vecset.encoders.speech import INT16_SCALE, Featurizer, Utterance, featurize, frame_labels
from vecset.encoders.speech.augment import SNR_RANGE_DB, SPEED_RANGE, WaveAugment, snr_in_range
from vecset.encoders.speech.voice_augment import VoiceAugment


def crop_utterances(items: list[Utterance], max_frames: int) -> tuple[list[Utterance], int, int]:
    """Each utterance cut to its first ``max_frames`` frames (features and labels): the new
    items, how many were cut and how many frames they lost."""
    out, cut, dropped = [], 0, 0
    for u in items:
        T = len(u.x)
        if T > max_frames:
            cut, dropped = cut + 1, dropped + T - max_frames
            u = replace(u, x=u.x[:max_frames], y=None if u.y is None else u.y[:max_frames])
        out.append(u)
    return out, cut, dropped


class SpeechUtterances(Dataset):
    """Featurized utterances (``Utterance``, ``encoders/speech/reader.py``) as the collate
    takes them: ``{"x": (T, F) float, "y": (T,) long, "id": int}`` (no "y" without labels)."""

    def __init__(self, items: list[Utterance]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        u = self.items[i]
        out = {"x": u.x, "id": u.id}
        if u.y is not None:
            out["y"] = u.y
        return out


def draw_generator(seed: int, epoch: int, index: int) -> torch.Generator:
    """The generator of one draw: (seed, epoch, index) mixed by numpy's SeedSequence (nearby
    triples give unrelated streams)."""
    state = np.random.SeedSequence([seed, epoch, index]).generate_state(2, dtype=np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))


class EpochKeys(Sampler):
    """Wraps a sampler of indices and yields ``(epoch, index)`` keys; ``set_epoch`` (called by
    Lightning at every training epoch) sets the epoch."""

    def __init__(self, sampler: Sampler) -> None:
        self.sampler, self.epoch = sampler, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self):
        epoch = self.epoch
        for i in self.sampler:
            yield epoch, i


class AugmentedUtterances(SpeechUtterances):
    """Training utterances perturbed at every draw: ``{"x": (T', F), "y": (T',), "id": int}``.

    Each utterance keeps ``wav`` (n,) int16 at 16 kHz, ``segments`` and ``sample_rate`` (its
    .phn's rate) besides the plain ``x``/``y`` (the plain frames still feed the global
    normalization statistics). An index reads the plain item; an ``(epoch, index)`` key
    (``EpochKeys``) draws.

    Args:
        items: the training split's utterances (``SpeechReader.read`` with ``keep_wave=True``).
        augment: speed and noise (None: none).
        featurizer: the data module's featurizer (the one that made the plain frames).
        class_names: the phone set's names (frame labels).
        seed: mixed with the epoch and the index into each draw's generator.
        voice: voice and channel transforms, applied first, same length (None: none); one
            generator serves both, so without ``voice`` the speed and noise draws are unchanged.

    Shapes:
        wav (n,) -> perturbed (ceil(n / f),) -> x (T', F), y (T',) with T' = num_frames(ceil(n / f)).
    """

    def __init__(self, items: list[Utterance], augment: WaveAugment | None, featurizer: Featurizer,
                 class_names: list[str], seed: int = 0, voice: VoiceAugment | None = None) -> None:
        super().__init__(items)
        if augment is None and voice is None:
            raise ValueError("AugmentedUtterances: give augment, voice or both")
        self.augment, self.featurizer, self.class_names, self.seed = augment, featurizer, class_names, seed
        self.voice = voice

    def __getitem__(self, key: int | tuple[int, int]) -> dict:
        if not isinstance(key, tuple):
            return super().__getitem__(key)
        epoch, i = key
        u = self.items[i]
        wav = u.wav.float() / INT16_SCALE  # (n,)
        g = draw_generator(self.seed, epoch, i)
        if self.voice is not None:
            wav, _ = self.voice(wav, g)  # (n,): every sample in place
        label_rate = u.sample_rate
        if self.augment is not None:
            p = self.augment(wav, u.sample_rate, g)
            wav, label_rate = p.wav, p.label_rate
        x = featurize(self.featurizer, wav, u.path)  # (T', F)
        y, _ = frame_labels(u.segments, len(x), self.class_names, sample_rate=label_rate)
        return {"x": x, "y": torch.from_numpy(y), "id": u.id}


def wave_augment(speed_factors: list[float] | None, noise_snr_db: list[float] | None,
                 noise_prob: float) -> WaveAugment | None:
    """The data module's augmentation arguments checked (errors name the argument) and made a
    ``WaveAugment``; None when neither ``speed_factors`` nor ``noise_snr_db`` is set."""
    if speed_factors is not None:
        if not speed_factors or any(f <= 0 for f in speed_factors):
            raise ValueError(f"speed_factors must be a non-empty list of factors > 0 (e.g. [0.9, 1.0, 1.1]), "
                             f"got {speed_factors}")
        if not all(SPEED_RANGE[0] <= f <= SPEED_RANGE[1] for f in speed_factors):  # NaN too
            raise ValueError(f"speed_factors must be factors in [{SPEED_RANGE[0]}, {SPEED_RANGE[1]}] (published "
                             f"recipes use 0.9-1.1; 0.1 makes every waveform 10x longer), got {speed_factors}")
    if noise_snr_db is not None and (len(noise_snr_db) != 2 or noise_snr_db[0] > noise_snr_db[1]):
        raise ValueError(f"noise_snr_db must be [low, high] in dB with low <= high, got {noise_snr_db}")
    if noise_snr_db is not None and not snr_in_range(noise_snr_db):
        raise ValueError(f"noise_snr_db must be finite, in [{SNR_RANGE_DB[0]}, {SNR_RANGE_DB[1]}] dB (e.g. "
                         f"[10, 40]), got {noise_snr_db}")
    if not 0.0 <= noise_prob <= 1.0:
        raise ValueError(f"noise_prob must be in [0, 1], got {noise_prob}")
    if speed_factors is None and noise_snr_db is None:
        return None
    try:
        return WaveAugment(speed_factors=speed_factors or [1.0],
                           snr_db=tuple(noise_snr_db) if noise_snr_db is not None else None, noise_prob=noise_prob)
    except ValueError as e:  # a factor that is no whole number of Hz
        raise ValueError(f"speed_factors: {e}") from None
