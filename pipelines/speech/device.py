"""Speech frames resident on the training device: padded batches gathered there.

The featurized utterances of a split (a few hundred MB for hours of speech at 40 bins) are
joined into one (frames, F) tensor with their frame labels (frames,), kept on the training
device with each utterance's start and length. A batch is one gather by a (B, N) index on
the device: no per-item ``__getitem__``, no collate, no host-to-device copy of the features
(``device_loader.py`` does the same for images).

The batch's width N is its longest utterance (or its length bucket), a shape the host must
know to gather: the order is therefore drawn on the host (``data/gathered.py``'s
``GatherLoader``: seeded by (seed, epoch), every utterance once an epoch, sharded under DDP,
resumable mid-epoch) and the lengths are kept there too (a few KB), so nothing is read back
from the device. The batches equal
``pad_sets``' (the classic collate) for the same utterances: ``x`` zero-padded, ``mask``,
``y`` padded with -100, ``ids``, ``padded``. Batch augmentation (``batch_augment.SpecAugment``)
runs on each gathered batch, seeded per (seed, epoch, batch, rank) like the image loader's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from pytorch_lightning.utilities import rank_zero_info
from torch import Tensor

from vecset.encoders.collate import PADDED
from vecset.pipelines.data.device_loader import (
    BatchTransform,
    check_finite,
    fmt_bytes,
    share_that_fits,
)
from vecset.pipelines.data.gathered import GatherLoader, LengthBuckets, Placement, gather_loader
from vecset.pipelines.speech.utterances import AugmentedUtterances

PAD_LABEL = -100  # pad_sets' label padding: cross_entropy's ignore_index


@dataclass
class ResidentFrames:
    """One split's frames, joined.

    Shapes:
        x (T_total, F) float and y (T_total,) long (None without labels) on the device;
        starts, lengths, ids (n,) long on the device; host_lengths the n lengths as Python ints
        (what the host reads to size a batch: no tensor read).
    """

    x: Tensor
    y: Tensor | None
    starts: Tensor
    lengths: Tensor
    ids: Tensor
    host_lengths: list[int]

    @classmethod
    def join(cls, xs: Sequence[Tensor], ys: Sequence[Tensor] | None, ids: Sequence[int]) -> ResidentFrames:
        """The utterances' (T_i, F) features and (T_i,) labels joined, on the CPU (``to`` moves them)."""
        lengths = torch.tensor([len(x) for x in xs], dtype=torch.long)
        starts = torch.cumsum(lengths, 0) - lengths
        return cls(torch.cat(list(xs)), None if ys is None else torch.cat([torch.as_tensor(y) for y in ys]).long(),
                   starts, lengths, torch.tensor(list(ids), dtype=torch.long), [len(x) for x in xs])

    def nbytes(self) -> int:
        parts = [self.x, self.starts, self.lengths, self.ids] + ([self.y] if self.y is not None else [])
        return sum(t.numel() * t.element_size() for t in parts)

    def to(self, device: torch.device) -> ResidentFrames:
        return ResidentFrames(self.x.to(device), None if self.y is None else self.y.to(device),
                              self.starts.to(device), self.lengths.to(device), self.ids.to(device), self.host_lengths)

    def __len__(self) -> int:
        return len(self.host_lengths)

    @property
    def device(self) -> torch.device:
        return self.x.device

    def gather(self, rows: list[int], width: int | None = None) -> dict:
        """The batch of utterances ``rows`` (host ints), padded to the longest (``pad_sets``' batch)
        or to ``width`` (a length bucket, at least the longest).

        Shapes: x (B, N, F), mask (B, N) bool, y (B, N) long, ids (B,), N = width or the max length of ``rows``."""
        device = self.x.device
        lens = [self.host_lengths[r] for r in rows]
        N = max(lens) if width is None else width  # Python ints: no tensor read
        b = torch.tensor(rows, dtype=torch.long).to(device, non_blocking=True)
        t = torch.arange(N, device=device)
        length = self.lengths[b]  # (B,)
        mask = t[None, :] < length[:, None]  # (B, N)
        idx = (self.starts[b][:, None] + t[None, :]).clamp(max=len(self.x) - 1)  # (B, N)
        x = torch.where(mask[..., None], self.x[idx], torch.zeros((), dtype=self.x.dtype, device=device))
        batch = {"x": x, "mask": mask, "ids": self.ids[b], PADDED: min(lens) < N}
        if self.y is not None:
            batch["y"] = torch.where(mask, self.y[idx], torch.full((), PAD_LABEL, dtype=torch.long, device=device))
        return batch


class SpeechDeviceLoader(GatherLoader):
    """Batches of resident utterances (``GatherLoader``): the order on the host, each batch padded
    to its longest utterance or its length bucket, augmented on the device."""


def speech_device_loader(frames: ResidentFrames, batch_size: int, train: bool, shuffle: bool,
                         transforms: Sequence[BatchTransform] = (), buckets: LengthBuckets | None = None,
                         within_buckets: bool = False) -> SpeechDeviceLoader:
    """Training: a ``ResumableSampler`` order (seed: ``seed_everything``'s); evaluation: 0..n-1
    (under DDP each process's disjoint share, with ``eval_sampler``'s even batch size)."""
    return gather_loader(SpeechDeviceLoader, frames, batch_size, train, shuffle, transforms, buckets,
                         within_buckets)


class SpeechPlacement(Placement):
    """Where a speech data module's splits live (``Placement``); ``loader`` gives a
    ``SpeechDeviceLoader`` there, or None for the classic DataLoader.

    Args: as ``Placement``'s, and ``SpeechFramesDataModule``'s ``batch_augment``."""

    def __init__(self, on_device: bool | str, device_memory_share: float,
                 batch_augment: Sequence[BatchTransform] | None, buckets: LengthBuckets | None = None,
                 within_buckets: bool = False) -> None:
        self.batch_augment = list(batch_augment or [])
        if self.batch_augment and on_device is False:
            raise ValueError("batch_augment runs on the data on the device: it needs on_device true or auto, "
                             "got on_device: false")
        super().__init__(on_device, device_memory_share, buckets or LengthBuckets(None), within_buckets)

    def loader(self, dm, split: str, shuffle: bool, device: torch.device) -> SpeechDeviceLoader | None:
        """``dm``: the SpeechFramesDataModule (after ``setup``)."""
        frames = self.placed(dm, split, device)
        if frames is None:
            return None
        return speech_device_loader(frames, dm.batch_size, train=split == "train", shuffle=shuffle,
                                    transforms=self.batch_augment if split == "train" else (), buckets=self.buckets,
                                    within_buckets=self.within_buckets)

    def pack(self, dm, split: str) -> ResidentFrames:
        """A split's utterances joined on the CPU, checked: finite features, labels in the phone
        set (device batches skip the per-batch host checks)."""
        items = dm.sets[split].items
        labelled = all(u.y is not None for u in items)
        frames = ResidentFrames.join([u.x for u in items], [u.y for u in items] if labelled else None,
                                     [u.id for u in items])
        # check_finite names rows, here frames: the utterance whose span holds the frame
        utterance = lambda i: int(torch.searchsorted(frames.starts, torch.tensor(i), right=True)) - 1  # noqa: E731
        check_finite(split, {"x": frames.x}, lambda i: dm.describe(int(frames.ids[utterance(i)])))
        if frames.y is not None:
            real = frames.y[frames.y != PAD_LABEL]
            if real.numel() and (real.min() < 0 or real.max() >= len(dm.class_names)):
                raise ValueError(f"speech {split} split: frame labels span [{int(real.min())}, {int(real.max())}], "
                                 f"outside the {len(dm.class_names)} classes of phone_set {dm.phone_set!r}")
        return frames

    def _place(self, dm, device: torch.device) -> dict[str, ResidentFrames] | None:
        name = type(dm).__name__
        if self.on_device is False:
            return None
        if isinstance(dm.sets.get("train"), AugmentedUtterances):
            rank_zero_info(f"{name}: data with the CPU loader: speed_factors / noise_snr_db / voice_augment "
                           "featurize each draw on the CPU (on_device: auto)")
            return None
        splits = [s for s in ("train", "val", "test") if s in dm.sets]
        frames = {s: self.pack(dm, s) for s in splits}
        size = sum(f.nbytes() for f in frames.values())
        share = share_that_fits(name, "the frames take", "they stay", size, device, self.device_memory_share,
                                self.on_device)
        if share is None:
            return None
        if self.batch_augment:
            mean = frames["train"].x.mean(0).to(device) if "train" in frames else None  # (F,)
            for a in self.batch_augment:
                a.bind(fill=mean)
        augs = f" ({', '.join(type(a).__name__ for a in self.batch_augment)})" if self.batch_augment else ""
        buckets = self.bucket_note([n for f in frames.values() for n in f.host_lengths])
        rank_zero_info(f"{name}: frames on {device}: {fmt_bytes(size)} = {share} of {', '.join(splits)} (at most "
                       f"{100 * self.device_memory_share:.0f}%, on_device: {self.on_device}); batches gathered"
                       f"{' and augmented' if augs else ''} there{augs}{buckets}")
        return {s: f.to(device) for s, f in frames.items()}

