"""Pre-norm Transformer block (Xiong et al. 2020, "On Layer Normalization in the
Transformer Architecture"): x + Attn(LN(x)), then x + MLP(LN(x)); optionally with a
Conformer convolution module between the two (Gulati et al. 2020): x + Conv(LN(x))."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vecset.backbone.attention import MultiHeadSelfAttention
from vecset.backbone.drop_path import DropPath
from vecset.backbone.tracing import is_exporting

# PyTorch's (oneDNN's) CPU backward of a depthwise Conv1d is about 8x slower from 512
# positions on (10.1 ms at 500, 87.7 ms at 600, batch 8, d 128, K 15), and a padded batch is
# as long as its longest sequence: from there the module uses _DepthwiseConv1d
# (bench/conv.py measures both sides of the threshold)
SLOW_DEPTHWISE_BACKWARD = 512


class _DepthwiseConv1d(torch.autograd.Function):
    """Depthwise 1-D convolution ('same' padding, odd K) with its backward written as a
    forward convolution (the input's gradient) and K products (the weight's)."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:  # x (B, C, N), weight (C, 1, K)
        ctx.save_for_backward(x, weight)
        return F.conv1d(x, weight, bias, padding=weight.shape[-1] // 2, groups=x.shape[1])

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        x, weight = ctx.saved_tensors
        C, K, N = x.shape[1], weight.shape[-1], x.shape[-1]
        # backward runs outside autocast: under bf16-mixed, grad and x are bf16 and weight fp32;
        # the input's gradient is computed in grad's dtype, the weight's and bias's sums in fp32
        # and returned in the parameters' dtype
        # out[t] = sum_k w[k] x[t + k - K//2]: the input's gradient correlates with the flipped kernel
        grad_x = F.conv1d(grad, weight.flip(-1).to(grad.dtype), padding=K // 2, groups=C)
        acc = torch.promote_types(grad.dtype, torch.float32)  # fp32, or float64 where given
        g, xp = grad.to(acc), F.pad(x, (K // 2, K // 2)).to(acc)
        grad_w = torch.stack([(g * xp[..., k:k + N]).sum((0, 2)) for k in range(K)], dim=-1)
        return grad_x.to(x.dtype), grad_w[:, None].to(weight.dtype), g.sum((0, 2)).to(weight.dtype)


class ConvModule(nn.Module):
    """The Conformer convolution module over the sequence order: pointwise convolution to 2D,
    GLU, depthwise convolution over ``kernel`` positions, LayerNorm (not BatchNorm: small
    padded batches), SiLU, pointwise convolution back to D. Padded positions are
    zeroed before the depthwise convolution, so they never leak into real ones.

    Shapes: x (B, N, D), mask (B, N) bool -> (B, N, D)
    """

    def __init__(self, d_model: int, kernel: int, dropout: float = 0.0) -> None:
        super().__init__()
        if kernel < 1 or kernel % 2 == 0:
            raise ValueError(f"conv_kernel must be an odd number of positions, got {kernel}")
        self.pointwise_in = nn.Linear(d_model, 2 * d_model)
        self.depthwise = nn.Conv1d(d_model, d_model, kernel, padding=kernel // 2, groups=d_model)
        self.norm = nn.LayerNorm(d_model)
        self.pointwise_out = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        h = F.glu(self.pointwise_in(x), dim=-1) * mask[..., None]  # (B, N, D)
        h = h.transpose(1, 2)  # (B, D, N)
        # not in an exported graph: the set size is dynamic there (a branch on it would fix it),
        # and the custom backward is of no use to inference
        if not is_exporting() and h.device.type == "cpu" and h.shape[-1] >= SLOW_DEPTHWISE_BACKWARD:
            h = _DepthwiseConv1d.apply(h, self.depthwise.weight, self.depthwise.bias)
        else:
            h = self.depthwise(h)
        h = h.transpose(1, 2)
        return self.drop(self.pointwise_out(F.silu(self.norm(h))))


class Block(nn.Module):
    """Shapes: x (B, N, D), mask (B, N), bias as in MultiHeadSelfAttention -> (B, N, D).

    ``conv_kernel`` > 0 adds a Conformer convolution module after the attention (see
    ``ConvModule``): vector order is then the sequence order (a sequence's positions, not a set).
    ``local_mp``: a message-passing module (``GINEConv``) run beside the attention on its own
    pre-norm, its output added to the attention's (a GPS layer); it reads ``edges`` (B, T, N, N).
    ``drop_path``: stochastic depth (``DropPath``): in training each residual branch (attention,
    convolution, MLP) is dropped for a whole sample with this probability, the kept ones scaled
    by 1 / (1 - drop_path); the identity in eval.
    """

    def __init__(self, attn: MultiHeadSelfAttention, mlp_ratio: float = 4.0, dropout: float = 0.0,
                 conv_kernel: int = 0, local_mp: nn.Module | None = None, drop_path: float = 0.0) -> None:
        super().__init__()
        d = attn.d_model
        hidden = int(d * mlp_ratio)
        if hidden < 1:
            raise ValueError(f"mlp_ratio must be > 0 with int(d_model x mlp_ratio) >= 1 (the MLP's hidden width), "
                             f"got {mlp_ratio} for d_model={d}")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.attn = attn
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, d))
        self.drop = nn.Dropout(dropout)
        self.conv = ConvModule(d, conv_kernel, dropout) if conv_kernel else None
        self.norm_conv = nn.LayerNorm(d) if conv_kernel else None
        self.local_mp = local_mp
        self.norm_mp = nn.LayerNorm(d) if local_mp is not None else None
        # not a submodule when off: checkpoints and the module tree of drop_path 0 stay as they were
        self.drop_path = DropPath(drop_path) if drop_path else nn.Identity()

    def forward(self, x: Tensor, mask: Tensor, bias: Tensor | None = None, window: int | None = None,
                padded: bool | None = None, edges: Tensor | None = None) -> Tensor:
        """``padded``: whether ``mask`` has any False entry (None: the attention looks it up)."""
        h = self.attn(self.norm1(x), mask, bias, window, padded)
        if self.local_mp is not None:
            if edges is None:
                raise ValueError("a block with message passing (local_mp) needs the graph's edges (VectorSet.edges, "
                                 "which GraphEncoder gives); this input has none")
            h = h + self.local_mp(self.norm_mp(x), edges, mask)
        x = x + self.drop_path(self.drop(h))
        if self.conv is not None:
            x = x + self.drop_path(self.conv(self.norm_conv(x), mask))
        return x + self.drop_path(self.drop(self.mlp(self.norm2(x))))
