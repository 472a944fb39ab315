"""The convolutional tokenizer of Compact Convolutional Transformers.

Hassani et al. 2021, "Escaping the Big Data Paradigm with Compact Transformers" (CCT; SHI-Labs/
Compact-Transformers, ``Tokenizer``): instead of cutting non-overlapping patches, 1-2 blocks of
[3x3 convolution (no bias), ReLU, 3x3 max-pool of stride 2 with padding 1] turn the image into a
feature map whose cells are the vectors. The pooling windows overlap, so neighbouring vectors
share pixels (the "overlapping patches" that gave CCT about +2 points over a ViT of its size on
CIFAR-10). A 28x28 image is 14x14 = 196 vectors after one block, 7x7 = 49 after two.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from vecset.backbone.positional import NoPositional
from vecset.contracts.vectorset import VectorSet
from vecset.encoders.contract import Encoder
from vecset.encoders.image.encoder import (
    Positional2D,
    _check_image,
    _grid_pos,
    _sides,
    make_positional_2d,
)


class ConvTokenizer(Encoder):
    """CCT's tokenizer: ``layers`` x [Conv2d k x k (stride 1, padding k // 2, no bias), ReLU,
    MaxPool2d(3, stride 2, padding 1)], the last convolution giving d_model channels, then one
    vector per cell of the feature map, plus a 2-D positional encoding over that grid.

    Args:
        in_channels: C (1 grey, 3 RGB).
        d_model: vector width D (the last convolution's channels).
        layers: convolution + pooling blocks (1 or 2 in CCT); each halves a side (rounding up).
        hidden_channels: channels of the convolutions before the last (CCT's ``in_planes``, 64).
        kernel_size: the convolutions' kernel (odd; CCT: 3, 7 for ImageNet).
        downsample: ``pool``, CCT's max-pool after each convolution, or ``stride``, the
            convolution itself of stride 2 (no pooling): the same grid, 1.34x the training
            steps of ``pool`` in 10 minutes on one CPU thread, lower validation accuracy there
            (bench/logs/2026-12-06-cct-step.md).
        positional, max_h, max_w: as in PixelEncoder; max_h/max_w count vectors.
        channels_last: hold the convolutions' weights and run them on the image in channels-last
            memory (``torch.channels_last``, NHWC): the same values, a faster CPU step (the configs'
            CCT on one thread: bench/logs/2026-12-07-images-side-by-side.md).

    Shapes:
        batch["image"] (B, C, H, W) float -> VectorSet x (B, h*w, D) row-major with
        h = ceil(H / 2^layers) (each pooling rounds up), mask all True, pos (B, h*w, 2) the
        (row, column) of each cell times 2^layers (its top-left pixel).
    """

    def __init__(self, in_channels: int, d_model: int, layers: int = 2, hidden_channels: int = 64,
                 kernel_size: int = 3, positional: Positional2D = "sinusoidal", max_h: int | None = None,
                 max_w: int | None = None, downsample: Literal["pool", "stride"] = "pool",
                 channels_last: bool = True) -> None:
        super().__init__()
        if downsample not in ("pool", "stride"):
            raise ValueError(f"ConvTokenizer: downsample must be 'pool' or 'stride', got {downsample!r}")
        if layers < 1:
            raise ValueError(f"ConvTokenizer: layers must be >= 1 (convolution + pooling blocks), got {layers}")
        if hidden_channels < 1:
            raise ValueError(f"ConvTokenizer: hidden_channels must be >= 1, got {hidden_channels}")
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"ConvTokenizer: kernel_size must be odd (the map keeps its size), got {kernel_size}")
        self.in_channels, self.d_model, self.layers = in_channels, d_model, layers
        self.out_width = d_model
        widths = [in_channels] + [hidden_channels] * (layers - 1) + [d_model]
        blocks: list[nn.Module] = []
        stride = 2 if downsample == "stride" else 1
        for c_in, c_out in zip(widths[:-1], widths[1:], strict=True):
            # a k x k convolution of stride 2 and padding k // 2 halves a side rounding up, as the pooling does
            blocks += [nn.Conv2d(c_in, c_out, kernel_size, stride=stride, padding=kernel_size // 2, bias=False),
                       nn.ReLU()]
            blocks += [nn.MaxPool2d(3, stride=2, padding=1)] if downsample == "pool" else []
        self.conv = nn.Sequential(*blocks)
        for m in self.conv:
            if isinstance(m, nn.Conv2d):  # CCT's init: He-normal for the ReLU that follows
                nn.init.kaiming_normal_(m.weight)
        self.channels_last = channels_last
        if channels_last:  # .to(device), load_state_dict and copies keep the parameters' memory format
            self.conv.to(memory_format=torch.channels_last)
        self.step = 2**layers  # pixels a vector's cell covers a side
        self.positional = make_positional_2d(positional, d_model, max_h, max_w)

    def grid(self, h: int, w: int) -> tuple[int, int]:
        """The (rows, columns) of vectors an H x W image becomes: each pooling rounds a side up."""
        for _ in range(self.layers):
            h, w = -(-h // 2), -(-w // 2)
        return h, w

    def image_sides(self) -> dict:
        """Sides that are multiples of 2^layers (eager mode takes any: the pooling rounds up),
        up to a learned table's size: ``backbone.abilities.ImageSides``."""
        return _sides(self.positional, self.step, False)

    def forward(self, batch: dict) -> VectorSet:
        image: Tensor = batch["image"]
        _check_image(image, self.in_channels, "ConvTokenizer", batch)
        B = image.shape[0]
        if self.channels_last:
            image = image.contiguous(memory_format=torch.channels_last)
        fmap = self.conv(image)  # (B, D, h, w); channels-last: stored as (B, h, w, D)
        gh, gw = fmap.shape[-2:]
        x = fmap.flatten(2).transpose(1, 2)  # (B, h*w, D): a view when channels-last
        if not isinstance(self.positional, NoPositional):
            x = x + self.positional(gh, gw, image.device)  # (h*w, D)
        return VectorSet(x=x, mask=torch.ones(B, gh * gw, dtype=torch.bool, device=x.device),
                         pos=_grid_pos(gh, gw, self.step, image.device).expand(B, -1, -1), padded=False,
                         grid=(gh, gw))
