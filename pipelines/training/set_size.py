"""Refuse, before the first step, a set of vectors larger than the backbone's attention can hold."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from vecset.backbone.attention import available_memory
from vecset.contracts.abilities import AttentionWeights, Grid, has_cls
from vecset.contracts.data_errors import SetTooLarge
from vecset.pipelines.data.base import VecsetDataModule


def check_set_size(encoder: nn.Module, backbone: nn.Module, dm, device: torch.device, task: str | None = None) -> None:
    """Refuse, at setup, images whose sets of vectors the backbone's attention cannot hold,
    instead of a first step that runs for hours (a 4000x4000 image as 10^6 patch vectors) or
    fails allocating its weights.

    The DataModule tells the size of its images (``image_shape``, (C, H, W)) and how many a
    batch holds (``batch_size``), the encoder the grid of vectors one image makes (it declares
    ``Grid``), the backbone its blocks' heads and window (``AttentionWeights``).
    Full attention over a batch of B sets of N vectors weighs B x heads x N x N pairs: the
    plain formulation, the dense masked path and the attention plots hold them (the fused
    kernel holds less but takes the same N^2 time); truncated attention (window w) holds
    B x heads x N x 3w (the blocked path). A batch's weights must fit in the free memory of
    the device (``available_memory``, as the attention's own check before it allocates them);
    the size suggested in the error fits at the same batch size.
    """
    # the data's image_shape / batch_size: declared by the data module contract (None: not images)
    shape = dm.image_shape if isinstance(dm, VecsetDataModule) else None
    if shape is None and isinstance(dm, VecsetDataModule) and isinstance(backbone, AttentionWeights):
        longest = dm.longest_set()  # other data: the longest set it read, as it declares it
        if longest is not None:
            check_longest_set(longest, backbone, dm, device, task)
        return
    if shape is None or not isinstance(encoder, Grid) or not isinstance(backbone, AttentionWeights):
        return  # not images, or a backbone without attention (the baselines)
    _, H, W = shape
    gh, gw = encoder.grid(H, W)
    cls = int(has_cls(backbone))
    n = gh * gw + cls
    cost = attention_cost(n, backbone, dm.batch_size, device)
    if cost is None:
        return
    step = math.ceil(H / gh)  # pixels a vector covers on a side (patch size x the stem's strides)
    side = math.isqrt(max(cost.fit - cls, 0)) * step  # a square image of <= fit vectors
    example = f" (e.g. [{side}, {side}])" if side else ""
    where = f"task {task!r}: " if task else ""
    extra = ", plus the CLS vector" if cls else ""
    raise SetTooLarge(
        f"{where}{type(dm).__name__}'s images of {H}x{W} pixels make sets of {n} vectors ({type(encoder).__name__}: "
        f"a {gh}x{gw} grid{extra}); {cost.holds()}. At most {cost.fit} vectors a set fit at batch_size {cost.B}: set "
        f"the data's image_size{example}, a smaller batch_size, larger patches (PatchEncoder's patch_size), or "
        "truncated attention (the backbone's window)"
    )


def check_longest_set(longest: tuple[int, str], backbone: nn.Module, dm, device: torch.device,
                      task: str | None = None) -> None:
    """Refuse data whose longest set (``VecsetDataModule.longest_set``: one vector per item read)
    makes attention weights larger than the device's free memory at the batch size (the batch
    that holds it pads the others to its length), saying what it costs and the ways out."""
    n, what = longest
    n += int(has_cls(backbone))
    cost = attention_cost(n, backbone, dm.batch_size, device)
    if cost is None:
        return
    where = f"task {task!r}: " if task else ""
    raise SetTooLarge(
        f"{where}{what}: its set of {n} vectors is longer than attention can take here: {cost.holds()}. At most "
        f"{cost.fit} vectors a set fit at batch_size {cost.B}: crop or split the long sets (or leave them out), a "
        "smaller batch_size, or truncated attention (the backbone's window)")


@dataclass(frozen=True)
class AttentionCost:
    """The attention weights of one batch of sets of ``n`` vectors that do not fit in ``free``
    bytes: ``B`` sets, ``heads``, ``keys`` per query (n, or 3 x window), ``need`` bytes; ``fit``
    is the largest n that would."""

    B: int
    heads: int
    n: int
    keys: int
    window: int | None
    dtype: str
    need: int
    free: int
    fit: int
    device: torch.device

    def holds(self) -> str:
        sets = f"a batch of {self.B} sets" if self.B > 1 else "one set"
        if self.window is None:
            kind, shape = "full attention", f"{self.n} x {self.n} weights (batch x heads x N x N"
        else:
            kind, shape = (f"truncated attention (window {self.window})",
                           f"{self.n} x {self.keys} weights (batch x heads x N x 3 window")
        return (f"{kind} over {sets} holds {self.B} x {self.heads} x {shape}, {self.dtype}), about "
                f"{_bytes(self.need)}, but {_bytes(self.free)} is free on {self.device}")


def attention_cost(n: int, backbone: nn.Module, batch_size: int | None, device: torch.device) -> AttentionCost | None:
    """What a batch of ``batch_size`` sets of ``n`` vectors costs the backbone's attention, where
    it is more than the free memory of ``device``; None where it fits (or the free memory is not
    known)."""
    B = max(1, int(batch_size or 1))  # the sets one step holds
    attn = backbone.blocks[0].attn
    param = next(backbone.parameters())
    keys = n if attn.window is None else min(n, 3 * max(attn.window, 1))
    need = B * attn.heads * n * keys * param.element_size()
    free = available_memory(device)
    if free is None or need <= free:
        return None
    per_pair = B * attn.heads * param.element_size()
    fit = math.isqrt(free // per_pair) if attn.window is None else free // (per_pair * keys)  # the largest N that fits
    return AttentionCost(B, attn.heads, n, keys, attn.window, str(param.dtype).removeprefix("torch."), need, free,
                         fit, device)


def _bytes(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"
