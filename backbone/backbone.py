"""The shared self-attention trunk: a stack of pre-norm blocks, VectorSet -> VectorSet."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from functools import cache
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vecset.backbone.attention import MultiHeadSelfAttention, Normalize, Score
from vecset.backbone.block import Block
from vecset.backbone.local_mp import GINEConv
from vecset.backbone.tracing import is_exporting
from vecset.contracts.vectorset import VectorSet

LocalMP = Literal["none", "gine"]

# the advice is the head's side of it: a head that pools over every vector needs no CLS
CLS_WINDOW_ERROR = (
    "cls_token=True with truncated attention (window) would let the CLS vector see only the "
    "first `window` vectors; turn cls_token off and let the head pool over all vectors instead"
)


def _trunk(bb: Backbone, x: Tensor, mask: Tensor, bias: Tensor | None, window: int | None,
           padded: bool, edges: Tensor | None = None) -> Tensor:
    """The blocks and the final norm; padded positions of the output are zero.
    Shapes: x (B, N, D), mask (B, N), edges (B, T, N, N) -> (B, N, D)"""
    for block in bb.blocks:
        x = block(x, mask, bias, window, padded, edges)
    return bb.norm(x) * mask[..., None]


@cache
def _compiled_trunk():
    # a plain function compiled once, kept out of the module: nothing compiled is a
    # submodule, in the state dict or in a deepcopy; dynamo guards on each Backbone it meets
    return torch.compile(_trunk)


class Backbone(nn.Module):
    """``depth`` pre-norm self-attention blocks shared by every task.

    Args:
        d_model: vector width D (encoders project to it).
        depth: number of blocks (>= 1).
        heads: attention heads per block (D divisible by it).
        mlp_ratio: MLP hidden width / D.
        dropout: dropout in blocks and on attention weights, in [0, 1).
        score, normalize, window: see ``MultiHeadSelfAttention``. A VectorSet whose encoder
            set ``window`` uses that one instead (in a multi-task backbone, speech can use
            truncated attention while images and molecules attend to all vectors).
        cls_token: prepend a learned CLS vector (``VectorSet.cls``: a head may read the set's
            summary at index 0); the mask and any pairwise bias grow with it (CLS sees and
            is seen by all).
        relative_positions: R > 0 gives every block a learned per-head score bias by
            key-minus-query offset, clipped to +-R (see ``MultiHeadSelfAttention``).
        conv_kernel: K > 0 gives every block a Conformer convolution module over K positions
            after its attention (``ConvModule``). Like relative positions, this treats the
            vector order as a sequence order: for speech frames and text, not for sets.
        compile: run the blocks and the final norm through ``torch.compile`` (inductor),
            compiled on the first call (about a minute on a 2-core CPU) and again for a new
            shape or train/eval mode; the eager path is the default and gives the same values
            (docs/benchmarks.md has the measured speeds).
        local_mp: ``gine`` runs GINE message passing over the graph's edges beside every
            block's attention (a GPS layer, ``GINEConv``); it reads ``VectorSet.edges``, which
            ``GraphEncoder`` gives. ``none`` (default): attention only.
        bond_types: the edge types of ``VectorSet.edges`` (``GraphEncoder``'s ``num_edge_types``).
        drop_path: stochastic depth (``DropPath``, Huang et al. 2016): block i of ``depth`` drops
            its residual branches for a whole sample with probability drop_path * i / (depth - 1)
            in training (timm's linear rule: 0 for the first block, drop_path for the last);
            the identity in eval; a single block drops at drop_path. 0 (default): off.

    Shapes:
        VectorSet x (B, N, D) -> VectorSet x (B, N, D), or (B, N+1, D) with ``cls_token``.
        Padded positions of the output are zero.
    """

    def __init__(self, d_model: int = 64, depth: int = 2, heads: int = 4, mlp_ratio: float = 4.0,
                 dropout: float = 0.0, score: Score = "scaled_dot", normalize: Normalize = "softmax",
                 window: int | None = None, cls_token: bool = False, relative_positions: int = 0,
                 conv_kernel: int = 0, compile: bool = False, local_mp: LocalMP = "none", bond_types: int = 6,
                 drop_path: float = 0.0) -> None:
        super().__init__()
        if local_mp not in ("none", "gine"):
            raise ValueError(f"local_mp must be 'none' or 'gine', got {local_mp!r}")
        if depth < 1:
            raise ValueError(f"depth must be >= 1 (the number of blocks), got {depth}")
        if cls_token and window is not None:
            raise ValueError(CLS_WINDOW_ERROR)
        if cls_token and conv_kernel:
            raise ValueError("cls_token=True with conv_kernel would convolve the CLS vector with the first "
                             "vectors as if it were one of them; turn cls_token off and let the head pool "
                             "over all vectors instead")
        if not 0 <= drop_path < 1:
            raise ValueError(f"drop_path must be in [0, 1) (stochastic depth: the last block's drop rate), got {drop_path}")
        self.d_model = d_model
        self.drop_path = drop_path
        rates = [drop_path * i / (depth - 1) for i in range(depth)] if depth > 1 else [drop_path]
        self.blocks = nn.ModuleList(
            Block(MultiHeadSelfAttention(d_model, heads, score, normalize, window, dropout,
                                         relative_positions=relative_positions), mlp_ratio, dropout, conv_kernel,
                  GINEConv(d_model, bond_types) if local_mp == "gine" else None, drop_path=rate)
            for rate in rates
        )
        self.norm = nn.LayerNorm(d_model)
        self.cls = nn.Parameter(torch.randn(1, 1, d_model) * 0.02) if cls_token else None
        self.compile_blocks = compile  # not self.compile: that is nn.Module.compile, a method
        self.local_mp, self.bond_types = local_mp, bond_types

    def _prepend_cls(self, vs: VectorSet) -> VectorSet:
        B = vs.x.shape[0]
        x = torch.cat([self.cls.expand(B, 1, -1).to(vs.x.dtype), vs.x], dim=1)
        mask = F.pad(vs.mask, (1, 0), value=True)
        bias = vs.bias
        if bias is not None:
            # CLS row/column: allowed everywhere (bool) or no bias (float)
            pad = (1, 0, 1, 0)
            bias = F.pad(bias, pad, value=True) if bias.dtype == torch.bool else F.pad(bias, pad, value=0.0)
        pos = F.pad(vs.pos, (0, 0, 1, 0)) if vs.pos is not None else None
        edges = F.pad(vs.edges, (1, 0, 1, 0)) if vs.edges is not None else None  # CLS has no edges
        return VectorSet(x=x, mask=mask, pos=pos, bias=bias, cls=True, window=vs.window, padded=vs.padded,
                         edges=edges)

    def forward(self, vs: VectorSet) -> VectorSet:
        if vs.x.shape[-1] != self.d_model:
            raise ValueError(f"Backbone expects vectors of width d_model={self.d_model}, got {vs.x.shape[-1]}")
        if self.local_mp != "none" and (vs.edges is None or vs.edges.shape[1] != self.bond_types):
            got = "none" if vs.edges is None else f"{vs.edges.shape[1]} edge types"
            raise ValueError(f"Backbone(local_mp={self.local_mp!r}, bond_types={self.bond_types}) needs the graph's "
                             f"edges (VectorSet.edges, given by GraphEncoder with num_edge_types={self.bond_types}); "
                             f"got {got}")
        if self.cls is not None and not vs.cls:
            if vs.window is not None:
                raise ValueError(CLS_WINDOW_ERROR)
            vs = self._prepend_cls(vs)
        # exporting: the masked path for every input. Else the batch says whether it is padded
        # (``VectorSet.padded``, from the collate); only where it does not is the mask read,
        # once, not once a block (a host sync on a GPU)
        padded = True if is_exporting() else vs.padded if vs.padded is not None else not bool(vs.mask.all())
        run = _compiled_trunk() if self.compile_blocks else _trunk
        return replace(vs, x=run(self, vs.x, vs.mask, vs.bias, vs.window, padded, vs.edges))

    def receptive_field(self, window: int | None = None) -> int | None:
        """How many positions on each side one output vector depends on: per block its
        attention window plus half its convolution kernel, summed over the blocks. ``window``
        is the VectorSet's (an encoder's choice, which overrides the blocks' own); None when
        the output depends on every position (a block without a window, or a CLS vector).
        Chunked inference over a long sequence is exact with at least this much overlap."""
        if self.cls is not None:
            return None
        total = 0
        for block in self.blocks:
            w = block.attn.window if window is None else window
            if w is None:
                return None
            total += w + (block.conv.depthwise.kernel_size[0] // 2 if block.conv is not None else 0)
        return total

    @contextmanager
    def capture_attention(self, layer: int = -1):
        """Keep the attention weights of one block while inside the context.

        >>> with backbone.capture_attention(layer=-1) as get:
        ...     backbone(vs)
        >>> weights = get()  # (B, H, N, N)
        >>> first = get(queries=300)  # (B, H, 300, N)

        A windowed layer keeps only its band of weights, (B, H, N, 2 x window + 1) in
        ``blocks[layer].attn.last_weights``; ``get`` expands the queries asked for (see
        ``MultiHeadSelfAttention.captured_weights``).
        """
        attn = self.blocks[layer].attn
        attn.capture = True
        try:
            yield attn.captured_weights
        finally:
            attn.capture = False
            attn.last_weights = attn.last_window = None

    def attention_weights(self, vs: VectorSet, layer: int = -1, queries: int | None = None) -> Tensor:
        """(B, H, Nq, N) attention weights of block ``layer`` for the first ``queries`` queries."""
        with self.capture_attention(layer) as get:
            self(vs)
            return get(queries)
