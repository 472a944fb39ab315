"""bf16-mixed attention (torch.autocast on the CPU) equals float32 within bf16's precision, for
every score x normalization and each path: fused SDPA, dense reference, blocked window."""

import itertools

import pytest
import torch

from vecset.backbone import Backbone, VectorSet
from vecset.backbone.attention import NORMALIZES, SCORES, MultiHeadSelfAttention

LEARNABLE = [(s, n) for s, n in itertools.product(SCORES, NORMALIZES) if (s, n) != ("gaussian", "relu")]
# bf16 keeps 8 bits of mantissa (relative rounding 2^-9 = 0.002); a layer's products and sums
# stay within a few of those
TOL = dict(atol=3e-2, rtol=3e-2)


def outputs_and_grads(attn, x, mask, bf16: bool):
    attn.zero_grad(set_to_none=True)
    xx = x.clone().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        out = attn(xx, mask)
    out = out.float()
    (out[mask].pow(2).mean()).backward()
    return out, xx.grad, attn.in_proj.weight.grad.clone()


@pytest.mark.parametrize("score,normalize", LEARNABLE)
@pytest.mark.parametrize("window", [None, 4])
def test_bf16_equals_fp32(score, normalize, window):
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(16, heads=2, score=score, normalize=normalize, window=window,
                                  relative_positions=3 if window else 0).train()
    if window:
        attn.local_impl = "blocked"  # the blocked path (fused SDPA blocks for softmax dot-family scores)
        torch.nn.init.normal_(attn.rel_bias)
    x = torch.randn(3, 37, 16)
    mask = torch.ones(3, 37, dtype=torch.bool)
    mask[1, 25:] = False
    out32, gx32, gw32 = outputs_and_grads(attn, x, mask, bf16=False)
    out16, gx16, gw16 = outputs_and_grads(attn, x, mask, bf16=True)
    assert torch.isfinite(out16).all() and not torch.equal(out16, out32)  # bf16 did run
    torch.testing.assert_close(out16[mask], out32[mask], **TOL)
    scale = gw32.abs().max()  # gradients: compared relative to their largest entry
    torch.testing.assert_close(gw16 / scale, gw32 / scale, **TOL)
    torch.testing.assert_close(gx16[mask] / gx32.abs().max(), gx32[mask] / gx32.abs().max(), **TOL)


def test_bf16_backbone_output_is_float32_and_close():
    """The Backbone's residual stream stays float32 under autocast (its norms and the loss
    read float32), and the whole trunk agrees with the float32 one."""
    torch.manual_seed(1)
    bb = Backbone(d_model=32, depth=2, heads=4, mlp_ratio=2.0).eval()
    vs = VectorSet(x=torch.randn(2, 20, 32), mask=torch.ones(2, 20, dtype=torch.bool))
    with torch.no_grad():
        ref = bb(vs).x
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = bb(vs).x
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, ref, atol=5e-2, rtol=5e-2)


@pytest.mark.parametrize("amx", [False, True])
def test_sdpa_fp32_choice_follows_the_probe(monkeypatch, amx):
    """bf16 SDPA runs in fp32 on a CPU up to FP32_SDPA_MAX_N positions, FP32_SDPA_MAX_N_AMX with AMX."""
    from vecset.backbone.attention import paths

    monkeypatch.setattr(paths, "_cpu_has_amx", lambda: amx)
    limit = paths.FP32_SDPA_MAX_N_AMX if amx else paths.FP32_SDPA_MAX_N
    assert limit == (128 if amx else 512)
    short = torch.zeros(1, 1, limit, 4, dtype=torch.bfloat16)
    long = torch.zeros(1, 1, limit + 1, 4, dtype=torch.bfloat16)
    assert paths.sdpa_in_fp32(short) is True
    assert paths.sdpa_in_fp32(long) is False
    assert paths.sdpa_in_fp32(short.float()) is False  # fp32 inputs: nothing to change


@pytest.mark.parametrize("window", [None, 4])
def test_bf16_sdpa_in_fp32_equals_bf16_sdpa_and_reference(monkeypatch, window):
    """The fused path with SDPA upcast to fp32 and with SDPA kept in bf16 both agree with the
    float32 reference path; the output stays bf16 either way."""
    from vecset.backbone.attention import paths

    torch.manual_seed(2)
    attn = MultiHeadSelfAttention(16, heads=2, window=window).train()
    if window:
        attn.local_impl = "blocked"
    x = torch.randn(3, 37, 16)
    mask = torch.ones(3, 37, dtype=torch.bool)
    mask[2, 30:] = False
    attn.path = "reference"
    ref, gref, wref = outputs_and_grads(attn, x, mask, bf16=False)
    attn.path = "auto"
    results = {}
    for upcast in (True, False):
        monkeypatch.setattr(paths, "_cpu_has_amx", lambda: False)
        monkeypatch.setattr(paths, "FP32_SDPA_MAX_N", 512 if upcast else 0)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert attn(x, mask).dtype == torch.bfloat16
        results[upcast] = outputs_and_grads(attn, x, mask, bf16=True)
    assert not torch.equal(results[True][0], results[False][0])  # the two kernels did differ
    for out, gx, gw in results.values():
        torch.testing.assert_close(out[mask], ref[mask], **TOL)
        torch.testing.assert_close(gw / wref.abs().max(), wref / wref.abs().max(), **TOL)
        torch.testing.assert_close(gx[mask] / gref.abs().max(), gref[mask] / gref.abs().max(), **TOL)
