"""Backbone: padding invariance, permutation equivariance, CLS, positional encodings."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vecset.backbone import Backbone, Learned1D, Learned2D, Sinusoidal1D, Sinusoidal2D, VectorSet

D = 16


def make_backbone(**kw) -> Backbone:
    torch.manual_seed(0)
    return Backbone(d_model=D, depth=2, heads=4, mlp_ratio=2.0, **kw)


@settings(max_examples=25, deadline=None)
@given(lengths=st.lists(st.integers(1, 9), min_size=1, max_size=4), train=st.booleans(),
       window=st.sampled_from([None, 1, 3]), conv_kernel=st.sampled_from([0, 3]))
def test_padding_invariance(lengths, train, window, conv_kernel):
    """A set's outputs are the same alone, padded, or batched with longer sets."""
    bb = make_backbone(window=window, conv_kernel=conv_kernel)
    bb.train(train)  # dropout is 0: train mode must be exact too (no NaN from masked rows)
    g = torch.Generator().manual_seed(sum(lengths))
    sets = [torch.randn(n, D, generator=g) for n in lengths]
    batched = bb(VectorSet.from_list(sets))
    assert torch.isfinite(batched.x).all()
    for i, s in enumerate(sets):
        alone = bb(VectorSet.from_list([s])).x[0]
        padded = bb(VectorSet(x=torch.cat([s, torch.randn(3, D)])[None],
                              mask=torch.tensor([[True] * len(s) + [False] * 3]))).x[0, : len(s)]
        torch.testing.assert_close(batched.x[i, : len(s)], alone, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(padded, alone, atol=1e-5, rtol=1e-4)
        assert torch.all(batched.x[i, len(s):] == 0)


@pytest.mark.parametrize("score", ["scaled_dot", "additive", "gaussian"])
def test_permutation_equivariance_without_positions(score):
    bb = make_backbone(score=score).eval()
    x = torch.randn(1, 7, D)
    mask = torch.ones(1, 7, dtype=torch.bool)
    perm = torch.randperm(7)
    out = bb(VectorSet(x=x, mask=mask)).x
    out_p = bb(VectorSet(x=x[:, perm], mask=mask)).x
    torch.testing.assert_close(out_p, out[:, perm], atol=1e-5, rtol=1e-4)


def test_cls_token_grows_mask_and_bias_and_keeps_padding_invariance():
    bb = make_backbone(cls_token=True).eval()
    s = torch.randn(4, D)
    allowed = torch.ones(1, 4, 4, dtype=torch.bool)
    out = bb(VectorSet(x=s[None], mask=torch.ones(1, 4, dtype=torch.bool), bias=allowed))
    assert out.cls and out.x.shape == (1, 5, D) and out.mask.all() and out.bias.shape == (1, 5, 5)
    padded = bb(VectorSet(x=torch.cat([s, torch.zeros(2, D)])[None],
                          mask=torch.tensor([[True] * 4 + [False] * 2])))
    torch.testing.assert_close(padded.x[0, :5], out.x[0], atol=1e-5, rtol=1e-4)


def test_capture_attention_returns_weights_and_leaves_output_unchanged():
    bb = make_backbone().eval()
    vs = VectorSet.from_list([torch.randn(5, D), torch.randn(3, D)])
    plain = bb(vs).x
    with bb.capture_attention(layer=0) as get:
        captured = bb(vs).x
        w = get()
    torch.testing.assert_close(captured, plain, atol=1e-5, rtol=1e-4)
    assert w.shape == (2, 4, 5, 5)
    torch.testing.assert_close(w.sum(-1)[1, :, :3], torch.ones(4, 3))
    assert torch.all(w[1, :, :, 3:] == 0)
    assert bb.blocks[0].attn.capture is False


def test_learned_positional_rejects_too_long_input():
    pe = Learned1D(8, max_len=10)
    assert pe(10).shape == (10, 8)
    with pytest.raises(ValueError, match=r"input has 11 positions but the learned positional table holds max_len=10"):
        pe(11)
    with pytest.raises(ValueError, match="exceeds the learned 2-D table of 4x4"):
        Learned2D(8, 4, 4)(5, 4)


def test_sinusoidal_encodings():
    pe = Sinusoidal1D(8)(5000)
    assert pe.shape == (5000, 8)
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0] * 4))
    grid = Sinusoidal2D(8)(3, 4)
    assert grid.shape == (12, 8)
    # row part is shared along a row, column part along a column
    torch.testing.assert_close(grid[4, :4], grid[7, :4])
    torch.testing.assert_close(grid[1, 4:], grid[9, 4:])


def test_vectorset_validation_names_the_field():
    with pytest.raises(ValueError, match=r"mask must be \(B, N\)"):
        VectorSet(x=torch.zeros(2, 3, 4), mask=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask must be bool"):
        VectorSet(x=torch.zeros(2, 3, 4), mask=torch.ones(2, 3))
    with pytest.raises(ValueError, match=r"bias \(bool allowed-pairs\) must be \(B, N, N\)"):
        VectorSet(x=torch.zeros(2, 3, 4), mask=torch.ones(2, 3, dtype=torch.bool),
                  bias=torch.ones(2, 3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="x must be a float tensor"):
        VectorSet(x=torch.zeros(2, 3, 4, dtype=torch.long), mask=torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="non-empty"):
        VectorSet.from_list([torch.zeros(0, 4)])


def test_backbone_rejects_wrong_width():
    with pytest.raises(ValueError, match="d_model=16, got 8"):
        make_backbone()(VectorSet.from_list([torch.randn(3, 8)]))


def test_vectorset_window_overrides_backbone_window():
    """An encoder's window (speech) applies in a backbone shared with full-attention tasks."""
    torch.manual_seed(0)
    full = Backbone(d_model=D, depth=2, heads=4, mlp_ratio=2.0).eval()
    torch.manual_seed(0)
    windowed = Backbone(d_model=D, depth=2, heads=4, mlp_ratio=2.0, window=2).eval()
    vs = VectorSet.from_list([torch.randn(30, D), torch.randn(21, D)])
    via_set = full(VectorSet(x=vs.x, mask=vs.mask, window=2)).x
    torch.testing.assert_close(via_set, windowed(vs).x)
    assert not torch.allclose(via_set, full(vs).x)
    with pytest.raises(ValueError, match="window must be >= 1"):
        VectorSet(x=vs.x, mask=vs.mask, window=-1)


def test_cls_token_with_window_is_a_clear_error():
    with pytest.raises(ValueError, match="CLS vector see only the first `window` vectors"):
        Backbone(d_model=D, depth=1, heads=4, cls_token=True, window=4)
    bb = Backbone(d_model=D, depth=1, heads=4, cls_token=True)
    vs = VectorSet.from_list([torch.randn(5, D)])
    with pytest.raises(ValueError, match="CLS vector see only"):
        bb(VectorSet(x=vs.x, mask=vs.mask, window=2))


def test_conv_module_is_the_literal_conformer_formula():
    from vecset.backbone.block import ConvModule

    torch.manual_seed(0)
    K, N = 5, 9
    conv = ConvModule(D, K).eval()
    x = torch.randn(2, N, D)
    mask = torch.ones(2, N, dtype=torch.bool)
    mask[1, 6:] = False
    out = conv(x, mask)
    # by hand: pointwise to 2D, GLU, zero the padding, per-channel sum over K neighbours
    # (zeros beyond the ends), LayerNorm, SiLU, pointwise back
    a, b = (x @ conv.pointwise_in.weight.T + conv.pointwise_in.bias).chunk(2, dim=-1)
    h = a * torch.sigmoid(b) * mask[..., None]
    w = conv.depthwise.weight[:, 0]  # (D, K)
    dw = torch.zeros_like(h)
    for i in range(N):
        for k in range(K):
            j = i + k - K // 2
            if 0 <= j < N:
                dw[:, i] += h[:, j] * w[:, k]
    dw = dw + conv.depthwise.bias
    ref = conv.pointwise_out(torch.nn.functional.silu(conv.norm(dw)))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)
    # padded positions never reach real ones: change them, the real outputs stay
    x2 = x.clone()
    x2[1, 6:] = 100.0
    torch.testing.assert_close(conv(x2, mask)[1, :6], out[1, :6])


def test_conv_kernel_errors():
    with pytest.raises(ValueError, match="odd number of positions, got 4"):
        Backbone(d_model=D, depth=1, heads=4, conv_kernel=4)
    with pytest.raises(ValueError, match="convolve the CLS vector"):
        Backbone(d_model=D, depth=1, heads=4, conv_kernel=3, cls_token=True)


@pytest.mark.parametrize("k", [1, 3, 15])
def test_depthwise_conv_backward_is_exact(k):
    from vecset.backbone.block import _DepthwiseConv1d

    torch.manual_seed(0)
    x = torch.randn(2, 3, 11, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 1, k, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(_DepthwiseConv1d.apply, (x, w, b))
    # and equal to PyTorch's own depthwise Conv1d, forward and backward, past 512 positions
    x = torch.randn(4, 16, 600, requires_grad=True)
    w = torch.randn(16, 1, k, requires_grad=True)
    b = torch.randn(16, requires_grad=True)
    g = torch.randn(4, 16, 600)
    ours = _DepthwiseConv1d.apply(x, w, b)
    theirs = torch.nn.functional.conv1d(x, w, b, padding=k // 2, groups=16)
    torch.testing.assert_close(ours, theirs)
    mine = torch.autograd.grad(ours, (x, w, b), g)
    ref = torch.autograd.grad(theirs, (x, w, b), g)
    for a, r in zip(mine, ref, strict=True):
        torch.testing.assert_close(a, r, atol=1e-4, rtol=1e-4)


def test_conv_module_long_path_equals_the_short_one(monkeypatch):
    import vecset.backbone.block as block

    torch.manual_seed(0)
    conv = block.ConvModule(D, 15)
    x = torch.randn(2, block.SLOW_DEPTHWISE_BACKWARD + 8, D, requires_grad=True)
    mask = torch.ones(x.shape[:2], dtype=torch.bool)
    out = conv(x, mask)  # through _DepthwiseConv1d
    gx, gw = torch.autograd.grad(out.pow(2).sum(), (x, conv.depthwise.weight))
    monkeypatch.setattr(block, "SLOW_DEPTHWISE_BACKWARD", 10**9)  # PyTorch's Conv1d throughout
    out2 = conv(x, mask)
    gx2, gw2 = torch.autograd.grad(out2.pow(2).sum(), (x, conv.depthwise.weight))
    torch.testing.assert_close(out, out2)
    torch.testing.assert_close(gx, gx2, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(gw, gw2, atol=1e-3, rtol=1e-4)


def test_capture_of_a_windowed_layer_keeps_the_band_and_expands_chosen_queries(monkeypatch):
    import vecset.backbone.attention.memory as A

    bb = make_backbone(window=2).eval()
    vs = VectorSet.from_list([torch.randn(30, D), torch.randn(21, D)])
    with bb.capture_attention(layer=0) as get:
        bb(vs)
        band = bb.blocks[0].attn.last_weights
        w, first = get(), get(queries=5)
    assert band.shape == (2, 4, 30, 5)  # (B, H, N, 2 x window + 1): no N x N tensor kept
    assert w.shape == (2, 4, 30, 30) and first.shape == (2, 4, 5, 30)
    torch.testing.assert_close(first, w[:, :, :5])
    torch.testing.assert_close(w.sum(-1)[1, :, :21], torch.ones(4, 21))
    idx = torch.arange(30)
    assert torch.all(w[..., (idx[:, None] - idx[None, :]).abs() > 2] == 0)
    # the same weights as the dense reference path
    bb.blocks[0].attn.path = "reference"
    with bb.capture_attention(layer=0) as get:
        bb(vs)
        torch.testing.assert_close(get(), w, atol=1e-5, rtol=1e-4)
    bb.blocks[0].attn.path = "auto"
    # expanding all queries of a long windowed layer is refused with the sizes, not attempted
    monkeypatch.setattr(A, "available_memory", lambda device: 10_000)  # 10 kB
    with pytest.raises(MemoryError, match=r"2 x 4 x 30 x 30 .* queries="):
        bb.attention_weights(vs, layer=0)
    assert bb.attention_weights(vs, layer=0, queries=2).shape == (2, 4, 2, 30)


@pytest.mark.parametrize("kwargs,message", [
    (dict(depth=0), "depth must be >= 1 .* got 0"),
    (dict(depth=-1), "depth must be >= 1 .* got -1"),
    (dict(heads=0), "heads must be >= 1, got 0"),
    (dict(d_model=10, heads=4), "d_model=10 must be divisible by heads=4"),
    (dict(window=0), "window must be >= 1 .* got 0"),
    (dict(dropout=1.0), r"dropout must be in \[0, 1\), got 1.0"),
    (dict(mlp_ratio=0.0), "mlp_ratio must be > 0 .* got 0.0"),
])
def test_backbone_sizes_are_validated_naming_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Backbone(**{"d_model": D, "depth": 2, "heads": 4, **kwargs})


def test_vectorset_window_must_be_at_least_one():
    vs = VectorSet.from_list([torch.randn(3, D)])
    with pytest.raises(ValueError, match=r"VectorSet.window must be >= 1 .* got 0"):
        VectorSet(x=vs.x, mask=vs.mask, window=0)


def test_learned_positional_tables_need_a_size():
    with pytest.raises(ValueError, match="max_len must be >= 1, got 0"):
        Learned1D(8, max_len=0)
    with pytest.raises(ValueError, match="max_h and max_w must be >= 1, got 0 x 4"):
        Learned2D(8, 0, 4)


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("kw", [{}, {"window": 2}, {"relative_positions": 3}, {"score": "gaussian"}])
def test_training_step_fast_paths_equal_the_reference_path_with_gradients(padded, kw):
    """The fused, mask-free and blocked paths (and the projections' views) give the plain
    formulation's outputs and every parameter's and the input's gradient."""
    torch.manual_seed(4)
    x = torch.randn(3, 13, D)
    mask = torch.ones(3, 13, dtype=torch.bool)
    if padded:
        mask[1, 9:] = False
        mask[2, 4:] = False
    runs = {}
    for path in ("auto", "reference"):
        bb = make_backbone(**kw).train()
        for blk in bb.blocks:
            blk.attn.path = path
            blk.attn.local_impl = "blocked"  # the window's blocked path even at 13 vectors
        xi = x.clone().requires_grad_()
        out = bb(VectorSet(x=xi, mask=mask)).x
        (out * torch.linspace(-1, 1, D)).pow(2).sum().backward()
        runs[path] = (out, xi.grad, {n: p.grad for n, p in bb.named_parameters()})
    (out, gx, grads), (ref, ref_gx, ref_grads) = runs["auto"], runs["reference"]
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(gx[mask], ref_gx[mask], atol=1e-5, rtol=1e-4)
    assert grads.keys() == ref_grads.keys()
    for name in grads:
        torch.testing.assert_close(grads[name], ref_grads[name], atol=1e-5, rtol=1e-4, msg=name)


def test_backbone_looks_up_the_padding_once_and_its_blocks_trust_it(monkeypatch):
    """The Backbone tells every block whether the mask pads (one host sync, not one a block);
    a block told ``padded=True`` takes the masked kernel, which must equal the mask-free one."""
    bb = make_backbone().eval()
    x = torch.randn(2, 6, D)
    vs = VectorSet(x=x, mask=torch.ones(2, 6, dtype=torch.bool))
    looked_up = []
    monkeypatch.setattr(torch.Tensor, "all", lambda t, *a, **k: looked_up.append(t.shape) or torch.all(t, *a, **k))
    out = bb(vs).x
    assert looked_up == [(2, 6)]
    blk = bb.blocks[0]
    h = blk.norm1(x)
    torch.testing.assert_close(blk.attn(h, vs.mask, padded=True), blk.attn(h, vs.mask, padded=False), atol=1e-5,
                               rtol=1e-4)
    assert torch.isfinite(out).all()


def test_compiled_backbone_equals_eager_with_gradients():
    """``compile=True`` (inductor) gives the eager values: outputs, and every parameter's and
    the input's gradient, on a padded batch in train mode; eager is the default.

    Inductor's kernels are generated without SIMD here (``cpp.vec_isa_ok=False``): choosing the
    SIMD instruction set starts a Python process per candidate in every new process (about
    10 s on 2 cores, even with inductor's cache warm), and the vectorized code generation is
    inductor's own, tested by PyTorch; the path this tests (the blocks and the norm through
    ``torch.compile``, forward and backward) is the same."""
    import torch._inductor.config

    assert make_backbone().compile_blocks is False
    x = torch.randn(2, 7, D)
    mask = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        bb = Backbone(d_model=D, depth=1, heads=4, mlp_ratio=2.0, compile=compiled).train()  # 1 block: compiles faster
        xi = x.clone().requires_grad_()
        with torch._inductor.config.patch({"cpp.vec_isa_ok": False}):
            out = bb(VectorSet(x=xi, mask=mask)).x
            (out * torch.linspace(-1, 1, D)).pow(2).sum().backward()
        runs.append((out, xi.grad, {n: p.grad for n, p in bb.named_parameters()}))
    (out, gx, grads), (cout, cgx, cgrads) = runs
    torch.testing.assert_close(cout, out, atol=1e-5, rtol=1e-4)
    assert torch.all(cout[1, 4:] == 0)
    torch.testing.assert_close(cgx, gx, atol=1e-5, rtol=1e-4)
    for name in grads:
        torch.testing.assert_close(cgrads[name], grads[name], atol=1e-5, rtol=1e-4, msg=name)


def test_conv_module_long_path_trains_under_bf16_autocast(monkeypatch):
    """bf16-mixed (the auto precision on a CPU with bf16 units): the long-input depthwise path's
    backward, which runs outside autocast on bf16 gradients and fp32 weights, gives the same
    gradients as PyTorch's Conv1d under the same autocast, in the parameters' dtype."""
    import vecset.backbone.block as block

    torch.manual_seed(0)
    conv = block.ConvModule(D, 15)
    x = torch.randn(2, block.SLOW_DEPTHWISE_BACKWARD + 8, D, requires_grad=True)
    mask = torch.ones(x.shape[:2], dtype=torch.bool)
    params = (x, conv.depthwise.weight, conv.depthwise.bias)

    def grads():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = conv(x, mask)
        return torch.autograd.grad(out.float().pow(2).sum(), params)

    ours = grads()  # through _DepthwiseConv1d
    monkeypatch.setattr(block, "SLOW_DEPTHWISE_BACKWARD", 10**9)
    theirs = grads()  # PyTorch's Conv1d
    for a, r, p in zip(ours, theirs, params, strict=True):
        assert a.dtype == p.dtype == torch.float32
        scale = r.abs().max()
        torch.testing.assert_close(a / scale, r / scale, atol=2e-2, rtol=2e-2)
