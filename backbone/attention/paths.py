"""The three execution paths of attention, apart from what they compute.

- ``reference``: the plain matrix formulation O = normalize(score(Q, K) + bias) V, for every
  score and normalization; it holds (B, H, Nq, Nk) tensors (callers check the memory first);
- ``blocked``: truncated attention with any score and normalization, in blocks of ``window``
  queries against the 3 x window keys around them (``bands.to_blocks``): memory N x window;
- ``fused``: ``torch.nn.functional.scaled_dot_product_attention`` for a dot-family score under
  softmax, dense or blocked (``local_attention``) for a window.

A test holds the fused and blocked paths equal to the reference one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vecset.backbone.attention.bands import blocks_to_band, from_blocks, key_windows, to_blocks
from vecset.backbone.attention.normalizations import Normalization
from vecset.backbone.attention.scores import ScoreFunction, mask_self

# On a CPU with AVX512-BF16 but no AMX, PyTorch's flash-attention kernels (forward + backward)
# ran slower in bf16 than in fp32 up to N = 512, the casts to and from fp32 included (1.05-1.20x
# at N 128 and 512, d 128 and 256), and faster from N = 2048 (0.74-0.82x): bench/results/
# bf16_profile_ab.json. On an AMX CPU (two threads of a Xeon) the bf16 kernels were slower up to
# N = 128 (the Backbone step in bf16: 1.11x fp32 with them, 1.52x with fp32 SDPA at d 128; the G2P
# job's step 0.80x vs 0.96x) and faster at N = 512 (1.40x vs 1.30x): bench/results/
# attention_precision_amx*.json, bf16_profile_jobs_amx*.json.
FP32_SDPA_MAX_N = 512
FP32_SDPA_MAX_N_AMX = 128


@cache
def _cpu_has_amx() -> bool:
    probe = getattr(torch.cpu, "_is_amx_tile_supported", None)
    return bool(probe and probe())


def sdpa_in_fp32(q: Tensor) -> bool:
    """Whether SDPA on bf16 ``q`` (B, H, N, Dh) runs faster in fp32 on this machine (a CPU: up to
    FP32_SDPA_MAX_N positions, FP32_SDPA_MAX_N_AMX with AMX); eager only: under torch.compile the
    kernels stay as traced."""
    if q.dtype != torch.bfloat16 or q.device.type != "cpu" or torch.compiler.is_compiling():
        return False
    return q.shape[-2] <= (FP32_SDPA_MAX_N_AMX if _cpu_has_amx() else FP32_SDPA_MAX_N)


def reference(q: Tensor, k: Tensor, v: Tensor, allowed: Tensor, fbias: Tensor | None, score: ScoreFunction,
              normalization: Normalization, attn: nn.Module, dropout_p: float) -> tuple[Tensor, Tensor]:
    """The plain matrix formulation.

    Shapes: q (B, H, Nq, Dh), k, v (B, H, Nk, Dh), allowed bool broadcastable to
    (B, H, Nq, Nk), fbias float broadcastable to it or None -> out (B, H, Nq, Dh),
    weights (B, H, Nq, Nk)
    """
    scores = score(q, k, attn)  # (B, H, Nq, Nk)
    if fbias is not None:
        scores = scores + fbias
    if score.masks_self:  # self-attention: query i is key i
        scores = mask_self(scores, torch.eye(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device))
    weights = normalization(scores, allowed)
    drop = F.dropout(weights, dropout_p, dropout_p > 0)
    return drop @ v, weights


def blocked(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, window: int, score: ScoreFunction,
            normalization: Normalization, attn: nn.Module, dropout_p: float,
            offset_bias: Callable[[Tensor], Tensor] | None = None,
            band: bool = False) -> tuple[Tensor, Tensor | None]:
    """Truncated attention with any score and normalization, in blocks.

    Shapes: q, k, v (B, H, N, Dh), mask (B, N) bool -> out (B, H, N, Dh), and the weights'
    band (B, H, N, 2W + 1) when ``band`` (else None)
    """
    B, H, N, _ = q.shape
    qb, kb, vb, allowed, offsets = to_blocks(q, k, v, mask, window)
    scores = score(qb, kb, attn)  # (B*nb, H, W, 3W)
    if offset_bias is not None:
        scores = scores + offset_bias(offsets)  # (H, W, 3W)
    if score.masks_self:
        scores = mask_self(scores, offsets == 0)  # (W, 3W): the query's own key
    weights = normalization(scores, allowed)
    drop = F.dropout(weights, dropout_p, dropout_p > 0)
    out = from_blocks(drop @ vb, B, N)  # (B, H, N, Dh)
    return out, blocks_to_band(weights, B, N) if band else None


def local_attention(q: Tensor, k: Tensor, v: Tensor, key_mask: Tensor, window: int,
                    scale: float, key_bias: Tensor | None = None, dropout_p: float = 0.0,
                    offset_bias: Callable[[Tensor], Tensor] | None = None) -> Tensor:
    """Softmax attention where query i sees keys j with |i - j| <= window, in blocks, on SDPA.

    Each block of ``window`` queries attends to the keys of its own and the two neighbouring
    blocks (3 x window keys) with a small band mask (``to_blocks``), so memory grows with
    N x window rather than N^2.

    Shapes:
        q, k, v:  (B, H, N, Dh)
        key_mask: (B, N) bool, True for real keys
        key_bias: optional (B, H, N) additive per-key score term
        offset_bias: optional callable, (W, 3W) key-minus-query offsets -> (H, W, 3W) additive
            score term (a relative-position bias)
        returns:  (B, H, N, Dh)
    """
    B, H, N, Dh = q.shape
    qb, kb, vb, allowed, offsets = to_blocks(q, k, v, key_mask, window)
    if key_bias is None and offset_bias is None:
        attn_mask = allowed  # (B*nb, 1, W, 3W)
    else:
        attn_mask = torch.zeros((), dtype=q.dtype, device=q.device)
        if key_bias is not None:
            nb = qb.shape[0] // B
            attn_mask = attn_mask + key_windows(key_bias[..., None], window, nb).transpose(-1, -2)  # (B*nb, H, 1, 3W)
        if offset_bias is not None:
            attn_mask = attn_mask + offset_bias(offsets).to(q.dtype)  # (H, W, 3W)
        attn_mask = torch.where(allowed, attn_mask, float("-inf"))  # (B*nb, H, W, 3W)
    out = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=attn_mask, dropout_p=dropout_p,
                                         scale=scale)  # (B*nb, H, W, Dh)
    return from_blocks(out, B, N)


def fused_dense(q: Tensor, k: Tensor, v: Tensor, allowed: Tensor | None, fbias: Tensor | None,
                key_bias: Tensor | None, scale: float, dropout_p: float) -> Tensor:
    """Softmax attention on SDPA over all keys: ``allowed`` None means every key (SDPA then
    picks its fastest kernel); a float mask is built only when a bias enters it.

    Shapes: q, k, v (B, H, N, Dh), allowed bool (B, 1, N|1, N), fbias (B, 1|H, N, N),
    key_bias (B, H, N) -> (B, H, N, Dh)
    """
    if allowed is None and fbias is None and key_bias is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=scale)
    if fbias is None and key_bias is None:
        attn_mask = allowed
    else:
        attn_mask = torch.zeros((), dtype=q.dtype, device=q.device)
        if fbias is not None:
            attn_mask = attn_mask + fbias
        if key_bias is not None:
            attn_mask = attn_mask + key_bias[:, :, None, :]
        if allowed is not None:
            attn_mask = torch.where(allowed, attn_mask, float("-inf"))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, scale=scale)
