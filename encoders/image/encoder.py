"""Images as sets of vectors: one vector per pixel, or one per p x p patch.

Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words" (ViT): non-overlapping patches,
a linear projection of each flattened patch, and a 2-D positional encoding added to it.
A 5x10 RGB image is 50 pixel vectors of 3 values; with p = 5 it is 2 patch vectors of 75.
The projection of flattened patches is written as a Conv2d with kernel = stride = p, which
is the same linear map (and what timm's ``PatchEmbed`` does).

An optional convolutional stem before the patches (Xiao et al. 2021, "Early Convolutions Help
Transformers See Better"): a few 3x3 convolutions give each patch vector local features
(edges, textures) that a ViT trained from scratch on small data learns slowly by itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vecset.backbone.positional import Learned2D, NoPositional, Sinusoidal2D
from vecset.contracts.vectorset import VectorSet
from vecset.encoders.contract import Encoder

Positional2D = Literal["none", "sinusoidal", "learned"]


def make_positional_2d(kind: Positional2D, d_model: int, max_h: int | None, max_w: int | None) -> nn.Module:
    """The 2-D encoding over the grid of vectors (pixels or patches)."""
    if kind == "none":
        return NoPositional()
    if kind == "sinusoidal":
        return Sinusoidal2D(d_model)
    if kind == "learned":
        if not max_h or not max_w:
            raise ValueError("positional='learned' needs max_h and max_w (the largest grid, in vectors)")
        return Learned2D(d_model, max_h, max_w)
    raise ValueError(f"positional must be 'none', 'sinusoidal' or 'learned', got {kind!r}")


def _sides(positional: nn.Module, step: int, pad: bool) -> dict:
    """``image_sides()`` of an encoder whose vectors cover ``step`` pixels a side."""
    learned = isinstance(positional, Learned2D)  # its table bounds the grid
    return {"multiple_of": step, "pad": pad, "max_height": positional.max_h * step if learned else None,
            "max_width": positional.max_w * step if learned else None}


def _check_image(image: Tensor, in_channels: int, who: str, batch: dict) -> None:
    if image.dim() != 4:
        raise ValueError(f"{who} expects batch['image'] of shape (B, C, H, W), got {tuple(image.shape)}")
    if image.shape[1] != in_channels:
        ids = batch.get("ids")
        where = f" (sample ids {ids.tolist()[:8]})" if ids is not None else ""
        raise ValueError(
            f"{who} expects {in_channels}-channel images (in_channels={in_channels}) but batch['image'] "
            f"has {image.shape[1]} channels{where}; convert the images (e.g. channels/convert in the "
            "DataModule) or set in_channels"
        )


class PixelEncoder(Encoder):
    """One vector per pixel: its C channel values, projected to d_model, plus a 2-D
    positional encoding of (row, column).

    Args:
        in_channels: C (1 grey, 3 RGB).
        d_model: vector width D.
        positional: ``sinusoidal`` (any size), ``learned`` (a grid up to max_h x max_w;
            larger is an error) or ``none`` (the set is then permutation-invariant).
        max_h, max_w: table size for ``learned``, in pixels.

    Shapes:
        batch["image"] (B, C, H, W) float -> VectorSet x (B, H*W, D) row-major,
        mask (B, H*W) all True, pos (B, H*W, 2) (row, column) of each pixel.
    """

    def __init__(self, in_channels: int, d_model: int, positional: Positional2D = "sinusoidal",
                 max_h: int | None = None, max_w: int | None = None) -> None:
        super().__init__()
        self.in_channels, self.d_model = in_channels, d_model
        self.out_width = d_model
        self.proj = nn.Linear(in_channels, d_model)
        self.positional = make_positional_2d(positional, d_model, max_h, max_w)

    def grid(self, h: int, w: int) -> tuple[int, int]:
        """The (rows, columns) of vectors an H x W image becomes."""
        return h, w

    def image_sides(self) -> dict:
        """Any H x W (up to a learned table's size): ``backbone.abilities.ImageSides``."""
        return _sides(self.positional, 1, False)

    def forward(self, batch: dict) -> VectorSet:
        image: Tensor = batch["image"]
        _check_image(image, self.in_channels, "PixelEncoder", batch)
        B, C, H, W = image.shape
        x = self.proj(image.flatten(2).transpose(1, 2))  # (B, H*W, D)
        pe = self.positional(H, W, image.device) if not isinstance(self.positional, NoPositional) else None
        if pe is not None:
            x = x + pe  # (H*W, D) broadcast over B
        return VectorSet(x=x, mask=torch.ones(B, H * W, dtype=torch.bool, device=x.device),
                         pos=_grid_pos(H, W, 1, image.device).expand(B, -1, -1), padded=False, grid=(H, W))


def conv_stem(in_channels: int, channels: Sequence[int], strides: Sequence[int] = ()) -> nn.Module:
    """3x3 convolutions (zero padding 1), each followed by BatchNorm and GELU;
    ``nn.Identity`` when ``channels`` is empty. ``strides`` (one per convolution, 1 or 2;
    empty: all 1) downsample: a stride-2 convolution halves an even side (Xiao et al. 2021's
    ViT_C stem is 3x3 stride-2 convolutions).

    Shapes: (B, in_channels, H, W) -> (B, channels[-1], H / prod(strides), W / prod(strides))
    for sides that are multiples of prod(strides).
    """
    strides = list(strides) or [1] * len(channels)
    if len(strides) != len(channels):
        raise ValueError(f"stem_strides needs one stride per stem convolution: {len(channels)} channels "
                         f"{list(channels)} but {len(strides)} strides {strides}")
    if any(s not in (1, 2) for s in strides):
        raise ValueError(f"stem_strides must each be 1 or 2, got {strides}")
    layers: list[nn.Module] = []
    for c, stride in zip(channels, strides, strict=True):
        if c < 1:
            raise ValueError(f"stem_channels must be >= 1 each, got {list(channels)}")
        layers += [nn.Conv2d(in_channels, c, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(c), nn.GELU()]
        in_channels = c
    return nn.Sequential(*layers) if layers else nn.Identity()


class PatchEncoder(Encoder):
    """One vector per non-overlapping p x p patch (ViT): the flattened patch (C*p*p values)
    projected to d_model, plus a 2-D positional encoding over the patch grid.

    Args:
        in_channels: C.
        d_model: vector width D.
        patch_size: p. A side that is not a multiple of p is an error unless ``pad`` is set
            (then the bottom/right edge is zero-padded up to the next multiple); an image
            smaller than p on either side is always an error (it would be mostly padding).
        positional, max_h, max_w: as in PixelEncoder; max_h/max_w count patches.
        pad: allow zero-padding of sides that are not multiples of p.
        stem_channels: widths of a convolutional stem run on the (padded) image before the
            patches (``conv_stem``: 3x3, BatchNorm, GELU each); the patches are then cut from
            its last feature map. Empty (default): no stem.
        stem_strides: one stride (1 or 2) per stem convolution; empty (default): all 1, the
            feature map keeps the image's size. With strides s_i a patch covers
            p * prod(s_i) pixels a side (e.g. strides [1, 2, 2] and p = 1: 4x4 pixels), and
            the sides must be multiples of that (or ``pad``).

    Shapes:
        batch["image"] (B, C, H, W) float -> VectorSet x (B, ceil(H/P)*ceil(W/P), D) row-major
        with P = p * prod(stem_strides), mask all True, pos (B, N, 2) (row, column) of each
        patch's top-left pixel.
    """

    def __init__(self, in_channels: int, d_model: int, patch_size: int,
                 positional: Positional2D = "sinusoidal", max_h: int | None = None,
                 max_w: int | None = None, pad: bool = False, stem_channels: Sequence[int] = (),
                 stem_strides: Sequence[int] = ()) -> None:
        super().__init__()
        if patch_size < 1:
            raise ValueError(f"patch_size must be >= 1, got {patch_size}")
        self.in_channels, self.d_model, self.patch_size, self.pad = in_channels, d_model, patch_size, pad
        self.out_width = d_model
        self.stem = conv_stem(in_channels, stem_channels, stem_strides)
        # pixels a patch vector covers a side: the patch times the stem's downsampling
        self.step = patch_size * math.prod(stem_strides)
        width = stem_channels[-1] if stem_channels else in_channels
        self.proj = nn.Conv2d(width, d_model, kernel_size=patch_size, stride=patch_size)
        self.positional = make_positional_2d(positional, d_model, max_h, max_w)

    def grid(self, h: int, w: int) -> tuple[int, int]:
        p = self.step
        return -(-h // p), -(-w // p)

    def image_sides(self) -> dict:
        """Sides that are multiples of the patch (or any, with ``pad``), up to a learned
        table's size: ``backbone.abilities.ImageSides``."""
        return _sides(self.positional, self.step, self.pad)

    def forward(self, batch: dict) -> VectorSet:
        image: Tensor = batch["image"]
        _check_image(image, self.in_channels, "PatchEncoder", batch)
        B, C, H, W = image.shape
        p = self.step
        what = (f"patch_size={p}" if p == self.patch_size
                else f"patch_size x the stem's strides = {self.patch_size} x {p // self.patch_size} = {p}")
        if H < p or W < p:
            raise ValueError(
                f"PatchEncoder: images of {H}x{W} pixels are smaller than {what}; "
                "resize them (image_size in the DataModule) or use a smaller patch_size"
            )
        if H % p or W % p:
            if not self.pad:
                raise ValueError(
                    f"PatchEncoder: image side {H}x{W} is not a multiple of {what}; "
                    "resize the images, pick a patch_size that divides both sides, or set pad: true"
                )
            image = F.pad(image, (0, -W % p, 0, -H % p))  # zero rows/columns at the bottom/right
        gh, gw = self.grid(H, W)
        x = self.proj(self.stem(image)).flatten(2).transpose(1, 2)  # (B, gh*gw, D)
        if not isinstance(self.positional, NoPositional):
            x = x + self.positional(gh, gw, image.device)  # (gh*gw, D)
        return VectorSet(x=x, mask=torch.ones(B, gh * gw, dtype=torch.bool, device=x.device),
                         pos=_grid_pos(gh, gw, p, image.device).expand(B, -1, -1), padded=False, grid=(gh, gw))


def _grid_pos(h: int, w: int, step: int, device: torch.device) -> Tensor:
    """(1, h*w, 2) float (row, column) pixel coordinates of a row-major grid."""
    r, c = torch.meshgrid(torch.arange(h, device=device), torch.arange(w, device=device), indexing="ij")
    return (torch.stack([r, c], -1).reshape(1, h * w, 2) * step).float()
