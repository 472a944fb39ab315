"""Baselines that fit the backbone's slot (VectorSet -> VectorSet of the same length).

- ``WindowMLP``: the classic context-window frame classifier of hybrid speech recognition
  (Bourlard & Morgan 1994, "Connectionist Speech Recognition"; Mohamed, Dahl & Hinton 2012):
  each vector concatenated with its k neighbours on each side, then an MLP.
- ``BiLSTM``: a bidirectional LSTM (Graves & Schmidhuber 2005, framewise phoneme
  classification). Each direction is its own unidirectional ``nn.LSTM``: the forward one runs
  on the padded batch (padding comes after the real vectors, so it cannot reach them), the
  backward one on each sequence reversed within its own length. This gives the outputs of a
  packed bidirectional ``nn.LSTM`` (a test holds them equal) and ran about 11x faster on
  a 2-core CPU.
- ``GridResNet``: a small ResNet (He et al. 2016, "Deep Residual Learning for Image
  Recognition") over the grid of pixel or patch vectors an image encoder makes. A
  convolution is self-attention restricted to a 3x3 neighbourhood with fixed, position-only
  weights; this baseline measures what the global, content-based attention adds on images.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vecset.backbone.tracing import NotExportable, is_exporting
from vecset.contracts.vectorset import VectorSet


class WindowMLP(nn.Module):
    """Each vector with its ``context`` neighbours on each side (zeros beyond the ends and at
    padding), concatenated, through an MLP back to d_model.

    Args:
        d_model: vector width D.
        context: neighbours k on each side (2k+1 vectors in all; k = 5 gives 11 frames).
        hidden: MLP hidden width; depth: hidden layers.
        dropout: dropout after each hidden layer.

    Shapes:
        VectorSet x (B, N, D) -> VectorSet x (B, N, D); padded positions are zero.
    """

    def __init__(self, d_model: int, context: int = 5, hidden: int = 512, depth: int = 2,
                 dropout: float = 0.0) -> None:
        super().__init__()
        if context < 0:
            raise ValueError(f"context must be >= 0, got {context}")
        self.d_model, self.context = d_model, context
        layers: list[nn.Module] = []
        width = (2 * context + 1) * d_model
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.GELU(), nn.Dropout(dropout)]
            width = hidden
        layers.append(nn.Linear(width, d_model))
        self.mlp = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(d_model)

    def receptive_field(self, window: int | None = None) -> int:
        """Positions on each side one output depends on: its ``context`` (see
        ``Backbone.receptive_field``; a VectorSet's window does not apply here)."""
        return self.context

    def forward(self, vs: VectorSet) -> VectorSet:
        B, N, D = vs.x.shape
        if D != self.d_model:
            raise ValueError(f"WindowMLP expects vectors of width d_model={self.d_model}, got {D}")
        k = self.context
        x = vs.x * vs.mask[..., None].to(vs.x.dtype)  # padding looks like the zeros past the ends
        x = F.pad(x, (0, 0, k, k))  # (B, N + 2k, D)
        win = x.unfold(1, 2 * k + 1, 1)  # (B, N, D, 2k+1)
        win = win.transpose(2, 3).reshape(B, N, (2 * k + 1) * D)  # (B, N, (2k+1)D), oldest first
        out = self.norm(self.mlp(win)) * vs.mask[..., None].to(x.dtype)  # (B, N, D)
        return replace(vs, x=out)


def reverse_padded(x: Tensor, lengths: Tensor) -> Tensor:
    """Reverse each sequence within its own length; padding stays at the end.

    Shapes: x (B, N, D), lengths (B,) -> (B, N, D)
    """
    B, N, _ = x.shape
    t = torch.arange(N, device=x.device)[None, :]  # (1, N)
    idx = torch.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)  # (B, N)
    return x.gather(1, idx[..., None].expand_as(x))


class BiLSTM(nn.Module):
    """A ``layers``-deep bidirectional LSTM; both directions concatenated, projected to d_model.

    Args:
        d_model: vector width D (input and output).
        hidden: LSTM units per direction.
        layers: stacked bidirectional layers (each layer reads both directions of the last).
        dropout: dropout between layers.

    Shapes:
        VectorSet x (B, N, D) -> VectorSet x (B, N, D); padded positions are zero.
    """

    # declared (backbone.abilities.NotExported): export refuses it before reading data
    export_refusal = ("BiLSTM: torch.export traces nn.LSTM for the example's number of frames only (no "
                      "dynamic set size); serve it with the PyTorch model (vecset predict)")

    def __init__(self, d_model: int, hidden: int = 256, layers: int = 2, dropout: float = 0.0) -> None:
        super().__init__()
        self.d_model, self.hidden, self.layers = d_model, hidden, layers
        self.fwd = nn.ModuleList(nn.LSTM(d_model if i == 0 else 2 * hidden, hidden, batch_first=True)
                                 for i in range(layers))
        self.bwd = nn.ModuleList(nn.LSTM(d_model if i == 0 else 2 * hidden, hidden, batch_first=True)
                                 for i in range(layers))
        self.drop = nn.Dropout(dropout)
        self.proj = nn.Linear(2 * hidden, d_model)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, vs: VectorSet) -> VectorSet:
        B, N, D = vs.x.shape
        if D != self.d_model:
            raise ValueError(f"BiLSTM expects vectors of width d_model={self.d_model}, got {D}")
        if is_exporting():  # torch 2.11 fixes the LSTM's sequence length at the example's
            raise NotExportable(self.export_refusal)
        lengths = vs.mask.sum(1)  # (B,)
        m = vs.mask[..., None].to(vs.x.dtype)
        h = vs.x * m
        for i, (f, b) in enumerate(zip(self.fwd, self.bwd, strict=False)):
            if i:
                h = self.drop(h)
            hf, _ = f(h)  # (B, N, H): causal, so trailing padding never reaches real vectors
            hb, _ = b(reverse_padded(h, lengths))  # (B, N, H) over each reversed sequence
            h = torch.cat([hf, reverse_padded(hb, lengths)], dim=-1) * m  # (B, N, 2H)
        out = self.norm(self.proj(h)) * m  # (B, N, D)
        return replace(vs, x=out)


def grid_cells(vs: VectorSet) -> tuple[Tensor, int, int]:
    """Each vector's cell on the image grid its encoder made, from ``vs.pos`` (row, column).

    The distinct rows (columns) of the batch's real vectors, in order, are the grid's rows
    (columns): patch positions step by the patch size, pixel positions by 1. Padded vectors
    get the extra cell ``gh * gw``. Two real vectors of one set on one cell, or positions that
    make more cells than vectors (not an image grid), are errors. Where the encoder declares
    its grid (``vs.grid``: row-major, unpadded) the cells are the vectors' indices, and
    nothing is read from the device.

    Shapes: vs.pos (B, N, 2) -> cells (B, N) long in [0, gh * gw], gh, gw
    """
    if vs.pos is None or vs.pos.shape[-1] != 2:
        got = None if vs.pos is None else tuple(vs.pos.shape)
        raise ValueError(f"GridResNet reads the (row, column) of every vector from VectorSet.pos (B, N, 2), "
                         f"got {got}; use an image encoder (PixelEncoder, PatchEncoder)")
    if vs.cls:
        raise ValueError("GridResNet got a set with a CLS vector, which has no grid cell; pool with "
                         "SequenceHead(pooling='mean' or 'attention')")
    B, N, _ = vs.pos.shape
    if vs.grid is not None:  # the encoder's row-major grid, every vector real: nothing to read back
        gh, gw = vs.grid
        return torch.arange(N, device=vs.pos.device).expand(B, N), gh, gw
    real = vs.pos[vs.mask]  # (R, 2)
    rows, cols = torch.unique(real[:, 0]), torch.unique(real[:, 1])  # sorted
    gh, gw = len(rows), len(cols)
    if gh * gw > N:
        raise ValueError(f"GridResNet: the vectors' positions make a {gh}x{gw} grid for sets of {N} vectors, "
                         "not the grid of an image encoder")
    r = torch.searchsorted(rows, vs.pos[..., 0].contiguous()).clamp(max=gh - 1)  # (B, N)
    c = torch.searchsorted(cols, vs.pos[..., 1].contiguous()).clamp(max=gw - 1)
    cells = torch.where(vs.mask, r * gw + c, gh * gw)  # (B, N)
    count = torch.zeros(B, gh * gw + 1, device=cells.device).scatter_add_(1, cells, torch.ones_like(cells, dtype=torch.float))
    if (count[:, :-1] > 1).any():
        raise ValueError("GridResNet: two vectors of one set sit on the same grid position")
    return cells, gh, gw


class ResidualBlock(nn.Module):
    """ResNet's basic block: two 3x3 convolutions with BatchNorm, ReLU, and the input added
    (through a strided 1x1 convolution when the width or resolution changes). Cells outside
    the image (``occ`` 0) are zeroed after every convolution, so they look like the zero
    padding a lone image sees.

    Shapes: x (B, C_in, H, W), occ (B, 1, H, W) -> (B, C_out, H', W'), occ (B, 1, H', W'),
    H' = ceil(H / stride)
    """

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.stride = stride
        self.shortcut = nn.Identity() if stride == 1 and c_in == c_out else nn.Sequential(
            nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: Tensor, occ: Tensor) -> tuple[Tensor, Tensor]:
        occ_out = occ[..., ::self.stride, ::self.stride]  # a 3x3/stride-s output cell is centred on input s*i
        h = F.relu(self.bn1(self.conv1(x))) * occ_out
        h = self.bn2(self.conv2(h))
        return F.relu(h + self.shortcut(x)) * occ_out, occ_out


class GridResNet(nn.Module):
    """A small ResNet over the encoder's grid of vectors (D channels per cell), in the
    backbone's slot: the vectors are placed on their grid (``grid_cells``), a 3x3 stem and
    ``len(widths)`` stages of ``blocks`` residual blocks run over it (each stage after the
    first halves the resolution), and every vector reads the final feature of the cell
    covering it, projected back to d_model.

    BatchNorm is ResNet's choice and trains fast, but couples the images of a training batch
    (its statistics); in eval mode a vector's output does not depend on the other sets of the
    batch or on padding (a test holds this).

    Args:
        d_model: vector width D (input and output).
        widths: channels of each stage (28x28 pixels with (32, 64, 128): 28, 14, 7 cells).
        blocks: residual blocks per stage.
        dropout: dropout before the output projection.

    Shapes:
        VectorSet x (B, N, D), pos (B, N, 2) -> VectorSet x (B, N, D); padded positions are zero.
    """

    # declared (backbone.abilities.NotExported): export refuses it before reading data
    export_refusal = ("GridResNet finds its grid from the vectors' positions (torch.unique: sizes that "
                      "depend on the values), which an exported graph cannot hold; serve it with the "
                      "PyTorch model (vecset predict)")

    def __init__(self, d_model: int, widths: Sequence[int] = (32, 64, 128), blocks: int = 2,
                 dropout: float = 0.0) -> None:
        super().__init__()
        if not widths or min(widths) < 1:
            raise ValueError(f"widths must be a non-empty list of channel counts >= 1, got {list(widths)}")
        if blocks < 1:
            raise ValueError(f"blocks must be >= 1, got {blocks}")
        self.d_model = d_model
        self.stem = nn.Sequential(nn.Conv2d(d_model, widths[0], 3, padding=1, bias=False),
                                  nn.BatchNorm2d(widths[0]), nn.ReLU())
        layers, c = [], widths[0]
        for i, w in enumerate(widths):
            for j in range(blocks):
                layers.append(ResidualBlock(c, w, stride=2 if i > 0 and j == 0 else 1))
                c = w
        self.layers = nn.ModuleList(layers)
        self.scale = 2 ** (len(widths) - 1)  # input cells per output cell, along each side
        self.drop = nn.Dropout(dropout)
        self.proj = nn.Linear(c, d_model)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, vs: VectorSet) -> VectorSet:
        B, N, D = vs.x.shape
        if D != self.d_model:
            raise ValueError(f"GridResNet expects vectors of width d_model={self.d_model}, got {D}")
        if is_exporting():
            raise NotExportable(self.export_refusal)
        cells, gh, gw = grid_cells(vs)  # (B, N)
        m = vs.mask[..., None].to(vs.x.dtype)  # (B, N, 1)
        grid = vs.x.new_zeros(B, gh * gw + 1, D).scatter(1, cells[..., None].expand(-1, -1, D), vs.x * m)
        occ = vs.x.new_zeros(B, gh * gw + 1).scatter(1, cells, m[..., 0])[:, :-1].reshape(B, 1, gh, gw)
        h = grid[:, :-1].reshape(B, gh, gw, D).permute(0, 3, 1, 2)  # (B, D, gh, gw)
        h = self.stem(h) * occ
        for layer in self.layers:
            h, occ = layer(h, occ)  # (B, C, gh', gw')
        C, hh, hw = h.shape[1:]
        r, c = cells.clamp(max=gh * gw - 1).div(gw, rounding_mode="floor"), cells.clamp(max=gh * gw - 1) % gw
        coarse = (r // self.scale) * hw + c // self.scale  # (B, N): the output cell covering each vector
        feats = h.flatten(2).transpose(1, 2).gather(1, coarse[..., None].expand(-1, -1, C))  # (B, N, C)
        out = self.norm(self.proj(self.drop(feats))) * m  # (B, N, D)
        return replace(vs, x=out)
