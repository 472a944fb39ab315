"""Baselines that fit the backbone's slot (VectorSet -> VectorSet of the same length).

- ``WindowMLP``: the classic context-window frame classifier of hybrid speech recognition
  (Bourlard & Morgan 1994, "Connectionist Speech Recognition"; Mohamed, Dahl & Hinton 2012):
  each vector concatenated with its k neighbours on each side, then an MLP.
- ``BiLSTM``: a bidirectional LSTM (Graves & Schmidhuber 2005, framewise phoneme
  classification). Each direction is its own unidirectional ``nn.LSTM``: the forward one runs
  on the padded batch (padding comes after the real vectors, so it cannot reach them), the
  backward one on each sequence reversed within its own length. This gives the outputs of a
  packed bidirectional ``nn.LSTM`` (a test holds them equal) and ran about 11x faster on
  the 2-core CPU these were measured on (DESIGN.md).
"""

from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vecset.backbone.vectorset import VectorSet


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
