"""Augmentations of whole batches on the device, with parameters drawn per sample.

A torchvision v2 transform called on a batch tensor draws ONE set of parameters for the whole
batch (one crop offset, one flip decision); its MixUp/CutMix are batch-level by design (one
lambda per batch). These draw every sample's parameters at once from a ``torch.Generator`` on
the batch's device and apply them with gather / where, so a batch of 2,048 images costs a few
kernels and no host read. ``DeviceLoader`` seeds the generator per batch (``batch_seed``).

Images (``batch["image"]`` (B, C, H, W), after scaling and normalization):
- ``RandomCrop``: shift by (dy, dx) uniform in [-padding, padding], the uncovered border filled
  with the data's background (torchvision's pad-then-crop; DeVries & Taylor's and airbench's
  "random crop with padding");
- ``HorizontalFlip``: mirror with probability ``p``;
- ``AlternatingFlip``: airbench's flip (Jordan 2024, arXiv:2404.00498): a fixed half of the
  images mirrored in even epochs, the other half in odd ones, so every two consecutive epochs
  show each image both ways (needs the batch's ``ids`` and the epoch, which ``DeviceLoader``
  gives through ``set_epoch``);
- ``RandomErasing``: a rectangle of a random share of the area and aspect ratio set to
  ``value`` with probability ``p`` (Zhong et al. 2020, "Random Erasing Data Augmentation");
- ``MixUp`` (Zhang et al. 2018) / ``CutMix`` (Yun et al. 2019): each sample is mixed with the
  next one of the batch (``roll(1)``, torchvision's pairing) with its own lambda ~ Beta(alpha,
  alpha); the labels become class probabilities (B, K), as torchvision's MixUp/CutMix give them,
  which the cross-entropy takes as soft targets.
Speech frames (``batch["x"]`` (B, T, F) with ``batch["mask"]`` (B, T)):
- ``SpecAugment`` time and frequency masks (Park et al. 2019), per utterance.

Each is a small class listed under the data module's ``batch_augment`` (``class_path`` /
``init_args``), off unless listed. What a transform needs from the data (the background value,
the class count) is given once, by the data module, through ``bind``.
"""

from __future__ import annotations

import math
import os

import torch
from torch import Tensor


class BatchAugment:
    """A transform of a batch dict on its device: ``augment(batch, generator) -> batch``. Each
    transforms one kind of batch (``ImageAugment``, ``FrameAugment``); a data module declares the
    kind it takes (its ``batch_augment_kind``) and refuses others when it is built."""

    key: str  # the batch field it transforms
    what: str  # the batches of its kind, for messages

    def bind(self, fill: Tensor | None = None, num_classes: int | None = None) -> None:
        """What the data says: ``fill`` (C,) the normalized background (what padding shows),
        ``num_classes`` for the soft labels of MixUp/CutMix."""

    def set_epoch(self, epoch: int) -> None:
        """The epoch of the batches that follow (``DeviceLoader`` calls it as an epoch starts);
        only a transform that follows the epoch (``AlternatingFlip``) keeps it."""

    def __call__(self, batch: dict, g: torch.Generator) -> dict:
        raise NotImplementedError


class ImageAugment(BatchAugment):
    """A transform of image batches."""

    key = "image"
    what = "image batches (batch['image'] (B, C, H, W))"


class FrameAugment(BatchAugment):
    """A transform of batches of frame sequences (speech)."""

    key = "x"
    what = "frame batches (batch['x'] (B, T, F) with its mask)"


def check_batch_augment(data: str, kind: type[BatchAugment], given: list[BatchAugment]) -> None:
    """Refuse, naming what ``data`` takes, a transform in ``given`` that is not of ``kind`` (MixUp
    on speech frames found no ``batch['image']`` in its first step: a KeyError)."""
    wrong = [a for a in given if not isinstance(a, kind)]
    if wrong:
        shipped = ", ".join(c.__name__ for c in SHIPPED.get(kind, ()))
        told = "; ".join(f"{type(a).__name__} transforms {a.what}" if isinstance(a, BatchAugment)
                         else f"{type(a).__name__} is not a BatchAugment" for a in wrong)
        raise ValueError(f"batch_augment: {data} takes {kind.__name__}s, transforms of {kind.what}"
                         f"{f' ({shipped})' if shipped else ''}; {told}")


def _check_p(name: str, p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: p must be in [0, 1], got {p}")


def shift_images(x: Tensor, dy: Tensor, dx: Tensor, fill: Tensor) -> Tensor:
    """``out[b, :, i, j] = x[b, :, i + dy[b], j + dx[b]]`` where that is inside the image, else ``fill``.

    Shapes:
        x (B, C, H, W); dy, dx (B,) long; fill (C,) -> (B, C, H, W).
    """
    B, C, H, W = x.shape
    rows = torch.arange(H, device=x.device) + dy[:, None]  # (B, H)
    cols = torch.arange(W, device=x.device) + dx[:, None]  # (B, W)
    inside = (((rows >= 0) & (rows < H))[:, :, None] & ((cols >= 0) & (cols < W))[:, None, :])  # (B, H, W)
    b = torch.arange(B, device=x.device)[:, None, None, None]
    c = torch.arange(C, device=x.device)[None, :, None, None]
    out = x[b, c, rows.clamp(0, H - 1)[:, None, :, None], cols.clamp(0, W - 1)[:, None, None, :]]  # (B, C, H, W)
    return torch.where(inside[:, None], out, fill.to(x.dtype).view(1, C, 1, 1))


class RandomCrop(ImageAugment):
    """Per sample, a crop of the image's own size from the image padded by ``padding`` on every
    side (padding shows the data's background): a shift uniform in [-padding, padding] each way."""

    def __init__(self, padding: int = 2) -> None:
        if padding < 0:
            raise ValueError(f"RandomCrop: padding must be >= 0, got {padding}")
        self.padding = padding
        self.fill: Tensor | None = None

    def bind(self, fill: Tensor | None = None, num_classes: int | None = None) -> None:
        self.fill = fill

    def __call__(self, batch: dict, g: torch.Generator) -> dict:
        x = batch[self.key]
        B, C = x.shape[:2]
        p = self.padding
        dy = torch.randint(-p, p + 1, (B,), generator=g, device=x.device)
        dx = torch.randint(-p, p + 1, (B,), generator=g, device=x.device)
        fill = self.fill if self.fill is not None else torch.zeros(C)
        return {**batch, self.key: shift_images(x, dy, dx, fill.to(x.device))}


class HorizontalFlip(ImageAugment):
    """Mirror each image left-right with probability ``p``."""

    def __init__(self, p: float = 0.5) -> None:
        _check_p("HorizontalFlip", p)
        self.p = p

    def __call__(self, batch: dict, g: torch.Generator) -> dict:
        x = batch[self.key]
        flip = torch.rand(len(x), generator=g, device=x.device) < self.p  # (B,)
        return {**batch, self.key: torch.where(flip[:, None, None, None], x.flip(-1), x)}


class AlternatingFlip(ImageAugment):
    """airbench's alternating flip: in epoch 0 each image is mirrored or not by a fixed draw from
    its id and ``seed`` (half of them, as ``HorizontalFlip(0.5)``); each later epoch mirrors exactly
    the images the epoch before did not. With random flips an image shows the same side in two
    consecutive epochs half the time; here never.

    The draw is a function of (id, seed) alone, so a resumed run flips what an uninterrupted one
    did; ``DeviceLoader`` calls ``set_epoch`` at the start of every epoch (as a sampler's).

    Args:
        seed: which half is mirrored first; default: the seed given to ``seed_everything``
            (``PL_GLOBAL_SEED``), as the samplers'.
    """

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def first_flip(self, ids: Tensor) -> Tensor:
        """(B,) bool: whether each id is mirrored in even epochs. The top bit of a 32-bit
        multiplicative (Fibonacci) hash of ``id + seed * 7919``: balanced over any run of ids."""
        seed = int(os.environ.get("PL_GLOBAL_SEED", 0)) if self.seed is None else self.seed
        h = ((ids.long() + seed * 7919) * 2654435761) & 0xFFFFFFFF
        return (h >> 31) == 1

    def __call__(self, batch: dict, g: torch.Generator) -> dict:
        if "ids" not in batch:
            raise ValueError("AlternatingFlip needs the batch's 'ids' (one per image) to flip each image "
                             f"every other epoch; the batch has {sorted(batch)}")
        x = batch[self.key]
        flip = self.first_flip(batch["ids"].to(x.device)) ^ bool(self.epoch % 2)  # (B,)
        return {**batch, self.key: torch.where(flip[:, None, None, None], x.flip(-1), x)}


class RandomErasing(ImageAugment):
    """With probability ``p`` per image, set a rectangle to ``value``: its area a share of the
    image uniform in ``scale``, its aspect ratio (h / w) log-uniform in ``ratio``, its place
    uniform (torchvision's ``RandomErasing``; where torchvision redraws a rectangle taller or
    wider than the image, this clips it to the image).
    """

    def __init__(self, p: float = 0.5, scale: tuple[float, float] = (0.02, 0.33),
                 ratio: tuple[float, float] = (0.3, 3.3), value: float = 0.0) -> None:
        _check_p("RandomErasing", p)
        if not 0 < scale[0] <= scale[1] <= 1:
            raise ValueError(f"RandomErasing: scale must satisfy 0 < min <= max <= 1, got {tuple(scale)}")
        if not 0 < ratio[0] <= ratio[1]:
            raise ValueError(f"RandomErasing: ratio must satisfy 0 < min <= max, got {tuple(ratio)}")
        self.p, self.scale, self.ratio, self.value = p, tuple(scale), tuple(ratio), value

    def boxes(self, B: int, H: int, W: int, g: torch.Generator, device) -> tuple[Tensor, ...]:
        """(apply, top, left, h, w), each (B,): the rectangles drawn for a batch."""
        u = torch.rand(B, 5, generator=g, device=device)
        apply = u[:, 0] < self.p
        area = H * W * (self.scale[0] + (self.scale[1] - self.scale[0]) * u[:, 1])
        lo, hi = math.log(self.ratio[0]), math.log(self.ratio[1])
        r = torch.exp(lo + (hi - lo) * u[:, 2])
        h = torch.sqrt(area * r).round().clamp(1, H).long()
        w = torch.sqrt(area / r).round().clamp(1, W).long()
        top = (u[:, 3] * (H - h + 1)).floor().long()
        left = (u[:, 4] * (W - w + 1)).floor().long()
        return apply, top, left, h, w

    def __call__(self, batch: dict, g: torch.Generator) -> dict:
        x = batch[self.key]
        B, C, H, W = x.shape
        apply, top, left, h, w = self.boxes(B, H, W, g, x.device)
        rows = torch.arange(H, device=x.device)[None]  # (1, H)
        cols = torch.arange(W, device=x.device)[None]  # (1, W)
        in_r = (rows >= top[:, None]) & (rows < (top + h)[:, None])  # (B, H)
        in_c = (cols >= left[:, None]) & (cols < (left + w)[:, None])  # (B, W)
        box = in_r[:, :, None] & in_c[:, None, :] & apply[:, None, None]  # (B, H, W)
        return {**batch, self.key: torch.where(box[:, None], torch.full_like(x, self.value), x)}


def beta(alpha: float, n: int, g: torch.Generator, device) -> Tensor:
    """(n,) draws of Beta(alpha, alpha) from ``g``: G1 / (G1 + G2) of two Gamma(alpha) draws
    (``torch.distributions.Beta`` takes no generator; ``torch._standard_gamma`` does)."""
    a = torch.full((2, n), float(alpha), device=device)
    gam = torch._standard_gamma(a, generator=g)
    return gam[0] / (gam[0] + gam[1]).clamp(min=torch.finfo(gam.dtype).tiny)


class _Mix(ImageAugment):
    def __init__(self, alpha: float = 1.0, p: float = 1.0) -> None:
        if alpha <= 0:
            raise ValueError(f"{type(self).__name__}: alpha must be > 0, got {alpha}")
        _check_p(type(self).__name__, p)
        self.alpha, self.p = alpha, p
        self.num_classes: int | None = None

    def bind(self, fill: Tensor | None = None, num_classes: int | None = None) -> None:
        self.num_classes = num_classes

    def soft_labels(self, y: Tensor) -> Tensor:
        """(B,) class indices -> (B, K) one-hot float; (B, K) probabilities stay."""
        if y.is_floating_point():
            return y
        if self.num_classes is None:
            raise ValueError(f"{type(self).__name__} needs the class count: the data module binds it (bind)")
        # scatter rather than F.one_hot, which checks the labels' range on the host off CUDA
        return torch.zeros(len(y), self.num_classes, device=y.device).scatter_(1, y[:, None], 1.0)

    def draw(self, B: int, g: torch.Generator, device) -> Tensor:
        """(B,) lambda per sample: Beta(alpha, alpha), or 1 (unmixed) with probability 1 - p."""
        lam = beta(self.alpha, B, g, device)
        keep = torch.rand(B, generator=g, device=device) >= self.p
        return torch.where(keep, torch.ones_like(lam), lam)


class MixUp(_Mix):
    """Per sample: ``x = lam x + (1 - lam) x_next``, labels likewise, lam ~ Beta(alpha, alpha)
    (with probability ``p``; else the sample is left as it is)."""

    def __call__(self, batch: dict, g: torch.Generator) -> dict:
        x, y = batch[self.key], self.soft_labels(batch["y"])
        lam = self.draw(len(x), g, x.device)  # (B,)
        lx = lam.to(x.dtype).view(-1, *([1] * (x.dim() - 1)))
        mixed = lx * x + (1 - lx) * x.roll(1, 0)
        return {**batch, self.key: mixed, "y": lam[:, None] * y + (1 - lam[:, None]) * y.roll(1, 0)}


class CutMix(_Mix):
    """Per sample: paste a box of the next sample's image, of area share about 1 - lam
    (lam ~ Beta(alpha, alpha); side ratio sqrt(1 - lam), centre uniform, clipped to the image,
    as torchvision's CutMix), with probability ``p``; the labels mix by the pasted box's actual area."""

    def __call__(self, batch: dict, g: torch.Generator) -> dict:
        x, y = batch[self.key], self.soft_labels(batch["y"])
        B, C, H, W = x.shape
        lam = self.draw(B, g, x.device)
        cut = torch.sqrt(1 - lam)
        u = torch.rand(B, 2, generator=g, device=x.device)
        cy, cx = (u[:, 0] * H).floor(), (u[:, 1] * W).floor()
        hh, hw = (cut * H / 2).floor(), (cut * W / 2).floor()
        y0, y1 = (cy - hh).clamp(0, H), (cy + hh).clamp(0, H)
        x0, x1 = (cx - hw).clamp(0, W), (cx + hw).clamp(0, W)
        rows = torch.arange(H, device=x.device)[None]
        cols = torch.arange(W, device=x.device)[None]
        box = (((rows >= y0[:, None]) & (rows < y1[:, None]))[:, :, None]
               & ((cols >= x0[:, None]) & (cols < x1[:, None]))[:, None, :])  # (B, H, W)
        area = ((y1 - y0) * (x1 - x0)) / (H * W)  # (B,) the pasted share
        mixed = torch.where(box[:, None], x.roll(1, 0), x)
        kept = (1 - area)[:, None]
        return {**batch, self.key: mixed, "y": kept * y + (1 - kept) * y.roll(1, 0)}


class SpecAugment(FrameAugment):
    """SpecAugment's masks on frame features, per utterance (Park et al. 2019): ``time_masks``
    spans of up to ``time_width`` frames (within each utterance's real frames) and
    ``freq_masks`` bands of up to ``freq_width`` features, each width uniform in [0, max], set
    to ``value`` (0: the normalized features' mean), or to the ``fill`` (F,) the data binds.
    Frame labels are unchanged.

    Shapes:
        batch["x"] (B, T, F), batch["mask"] (B, T) True on real frames.
    """

    def __init__(self, time_masks: int = 2, time_width: int = 20, freq_masks: int = 2, freq_width: int = 8,
                 value: float = 0.0) -> None:
        if min(time_masks, time_width, freq_masks, freq_width) < 0:
            raise ValueError("SpecAugment: mask counts and widths must be >= 0")
        self.time_masks, self.time_width = time_masks, time_width
        self.freq_masks, self.freq_width, self.value = freq_masks, freq_width, value
        self.fill: Tensor | None = None

    def bind(self, fill: Tensor | None = None, num_classes: int | None = None) -> None:
        """``fill`` (F,): what masked values show instead of ``value`` (the speech data module
        gives its training frames' per-feature mean, which the encoder's normalization maps to 0)."""
        self.fill = fill

    @staticmethod
    def spans(n: int, count: int, width: int, length: Tensor, g: torch.Generator) -> tuple[Tensor, Tensor]:
        """(start, width), each (B, count): widths uniform in [0, min(width, length)], starts
        uniform where the span fits in [0, length)."""
        B = len(length)
        u = torch.rand(B, count, 2, generator=g, device=length.device)
        cap = torch.minimum(torch.full_like(length, width), length).float()[:, None]  # (B, 1)
        w = (u[..., 0] * (cap + 1)).floor().clamp(max=cap)
        start = (u[..., 1] * (length.float()[:, None] - w + 1)).floor()
        return start.long(), w.long()

    def __call__(self, batch: dict, g: torch.Generator) -> dict:
        x, mask = batch[self.key], batch["mask"]
        B, T, F = x.shape
        hit = torch.zeros(B, T, F, dtype=torch.bool, device=x.device)
        if self.time_masks:
            start, w = self.spans(T, self.time_masks, self.time_width, mask.sum(1), g)
            t = torch.arange(T, device=x.device)[None, None]  # (1, 1, T)
            in_t = ((t >= start[..., None]) & (t < (start + w)[..., None])).any(1)  # (B, T)
            hit |= in_t[:, :, None]
        if self.freq_masks:
            start, w = self.spans(F, self.freq_masks, self.freq_width, torch.full((B,), F, device=x.device), g)
            f = torch.arange(F, device=x.device)[None, None]
            in_f = ((f >= start[..., None]) & (f < (start + w)[..., None])).any(1)  # (B, F)
            hit |= in_f[:, None, :]
        hit &= mask[:, :, None]
        fill = self.fill.to(x.dtype) if self.fill is not None else torch.full((), self.value, dtype=x.dtype,
                                                                              device=x.device)
        return {**batch, self.key: torch.where(hit, fill, x)}


# the shipped transforms of each kind, named in the refusal
SHIPPED: dict[type[BatchAugment], tuple[type[BatchAugment], ...]] = {
    ImageAugment: (RandomCrop, HorizontalFlip, AlternatingFlip, RandomErasing, MixUp, CutMix),
    FrameAugment: (SpecAugment,),
}
