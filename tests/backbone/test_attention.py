"""Attention: fast paths against the plain matrix formulation, masks, windows."""

import itertools
import math

import pytest
import torch

from vecset.backbone.attention import NORMALIZES, SCORES, MultiHeadSelfAttention, local_attention


def literal_attention(attn: MultiHeadSelfAttention, x: torch.Tensor, allowed: torch.Tensor,
                      fbias: torch.Tensor | None = None) -> torch.Tensor:
    """One unpadded set, head by head, written straight from the formulas.

    x: (n, D), allowed: (n, n) bool, fbias: (H, n, n) or None -> (n, D)
    """
    n, D = x.shape
    H, Dh = attn.heads, attn.head_dim
    Wq, Wk, Wv = attn.in_proj.weight.split(D)
    bq, bk, bv = attn.in_proj.bias.split(D)
    outs = []
    for h in range(H):
        sl = slice(h * Dh, (h + 1) * Dh)
        Q, K, V = x @ Wq[sl].T + bq[sl], x @ Wk[sl].T + bk[sl], x @ Wv[sl].T + bv[sl]
        A = torch.zeros(n, n)
        for i in range(n):
            for j in range(n):
                q, k = Q[i], K[j]
                if attn.score == "scaled_dot":
                    A[i, j] = q @ k / math.sqrt(Dh)
                elif attn.score == "dot":
                    A[i, j] = q @ k
                elif attn.score == "gaussian":
                    A[i, j] = -((q - k) ** 2).sum() / 2
                elif attn.score == "locality":  # a learned temperature; the diagonal masked below
                    A[i, j] = -math.inf if i == j else q @ k * attn.lsa_scale[h]
                else:
                    A[i, j] = attn.add_wv[h] @ torch.tanh(q @ attn.add_wq[h] + k @ attn.add_wk[h])
        if fbias is not None:
            A = A + fbias[h]
        if attn.normalize == "softmax":
            W = torch.softmax(A.masked_fill(~allowed, float("-inf")), dim=-1)
        elif attn.normalize == "relu":
            W = torch.relu(A) * allowed
        else:
            W = torch.sigmoid(A) * allowed
        outs.append(W @ V)
    return attn.out_proj(torch.cat(outs, dim=-1))


# gaussian with relu is rejected (it cannot learn): see the tests at the end
LEARNABLE = [(s, n) for s, n in itertools.product(SCORES, NORMALIZES) if (s, n) != ("gaussian", "relu")]


@pytest.mark.parametrize("score,normalize", LEARNABLE)
def test_every_combination_equals_literal_formula(score, normalize):
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(8, heads=2, score=score, normalize=normalize).eval()
    x = torch.randn(2, 5, 8)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    out = attn(x, mask)
    for b in range(2):
        n = int(mask[b].sum())
        ref = literal_attention(attn, x[b, :n], torch.ones(n, n, dtype=torch.bool))
        torch.testing.assert_close(out[b, :n], ref, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("score", ["scaled_dot", "dot", "gaussian"])
def test_fast_path_equals_reference_path_with_bias_and_window(score):
    torch.manual_seed(1)
    attn = MultiHeadSelfAttention(16, heads=4, score=score, window=2).eval()
    x = torch.randn(3, 9, 16)
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[1, 6:] = False
    bias = torch.randn(3, 4, 9, 9)
    fast = attn(x, mask, bias)
    attn.capture = True  # forces the reference path
    ref = attn(x, mask, bias)
    torch.testing.assert_close(fast[mask], ref[mask], atol=1e-5, rtol=1e-4)


def test_scaled_dot_softmax_equals_torch_multihead_attention():
    torch.manual_seed(2)
    D, H = 16, 4
    ours = MultiHeadSelfAttention(D, heads=H).eval()
    theirs = torch.nn.MultiheadAttention(D, H, batch_first=True).eval()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(ours.in_proj.weight)
        theirs.in_proj_bias.copy_(ours.in_proj.bias)
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.copy_(ours.out_proj.bias)
    x = torch.randn(2, 7, D)
    mask = torch.ones(2, 7, dtype=torch.bool)
    mask[0, 4:] = False
    expected, _ = theirs(x, x, x, key_padding_mask=~mask)
    torch.testing.assert_close(ours(x, mask)[mask], expected[mask], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("normalize", NORMALIZES)
def test_disallowed_pair_gets_exactly_zero_weight(normalize):
    torch.manual_seed(3)
    attn = MultiHeadSelfAttention(8, heads=2, normalize=normalize).eval()
    x = torch.randn(1, 4, 8)
    mask = torch.ones(1, 4, dtype=torch.bool)
    allowed = torch.ones(1, 4, 4, dtype=torch.bool)
    allowed[0, 0, 2] = allowed[0, 2, 0] = False  # 0 and 2 are not neighbours
    attn.capture = True
    attn(x, mask, allowed)
    w = attn.last_weights
    assert w.shape == (1, 2, 4, 4)
    assert torch.all(w[0, :, 0, 2] == 0) and torch.all(w[0, :, 2, 0] == 0)
    if normalize != "relu":  # relu may zero an allowed pair too
        assert torch.all(w[0, :, 0, 1] != 0)


def test_padded_keys_get_exactly_zero_weight():
    attn = MultiHeadSelfAttention(8, heads=2)
    attn.capture = True
    mask = torch.tensor([[True, True, False]])
    attn(torch.randn(1, 3, 8), mask)
    assert torch.all(attn.last_weights[0, :, :, 2] == 0)


@pytest.mark.parametrize("window", [1, 3])
def test_window_output_has_zero_gradient_outside_window(window):
    torch.manual_seed(4)
    attn = MultiHeadSelfAttention(8, heads=2, window=window)
    x = torch.randn(1, 12, 8, requires_grad=True)
    out = attn(x, torch.ones(1, 12, dtype=torch.bool))
    i = 6
    out[0, i].sum().backward()
    g = x.grad[0].abs().sum(-1)
    for j in range(12):
        if abs(i - j) <= window:
            assert g[j] > 0, j
        else:
            assert g[j] == 0, j


@pytest.mark.parametrize("n,window", [(7, 2), (64, 4), (50, 8), (33, 1), (100, 16)])
def test_blocked_local_attention_equals_dense_band(n, window):
    torch.manual_seed(5)
    attn = MultiHeadSelfAttention(16, heads=2, window=window, score="gaussian").eval()
    x = torch.randn(2, n, 16)
    mask = torch.ones(2, n, dtype=torch.bool)
    mask[1, n - n // 3:] = False
    attn.local_impl = "dense"
    dense = attn(x, mask)
    attn.local_impl = "blocked"
    blocked = attn(x, mask)
    torch.testing.assert_close(blocked[mask], dense[mask], atol=1e-5, rtol=1e-4)
    assert torch.isfinite(blocked).all()


def test_local_attention_shapes():
    q = k = v = torch.randn(2, 3, 10, 4)
    out = local_attention(q, k, v, torch.ones(2, 10, dtype=torch.bool), window=3, scale=0.5)
    assert out.shape == (2, 3, 10, 4)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadSelfAttention(10, heads=3)
    with pytest.raises(ValueError, match="score must be one of"):
        MultiHeadSelfAttention(8, score="cosine")
    with pytest.raises(ValueError, match="normalize must be one of"):
        MultiHeadSelfAttention(8, normalize="tanh")


@pytest.mark.parametrize("score", ["scaled_dot", "dot", "gaussian"])
def test_unpadded_fast_path_equals_forced_reference(score):
    torch.manual_seed(6)
    attn = MultiHeadSelfAttention(16, heads=4, score=score).eval()
    x = torch.randn(2, 11, 16)
    mask = torch.ones(2, 11, dtype=torch.bool)  # no padding: the mask-free kernel runs
    fast = attn(x, mask)
    attn.path = "reference"
    torch.testing.assert_close(attn(x, mask), fast, atol=1e-5, rtol=1e-4)


def test_oversized_pairwise_tensors_fail_before_allocating(monkeypatch):
    import vecset.backbone.attention.memory as A

    monkeypatch.setattr(A, "available_memory", lambda device: 10 * 2**20)  # pretend 10 MiB free
    attn = MultiHeadSelfAttention(8, heads=2, window=4)
    attn.path = "reference"  # the plain N x N formulation
    x = torch.randn(1, 2000, 8)
    with pytest.raises(MemoryError, match=r"reference attention path needs about 0.1 GiB .* 1 x 2 x 2000 x 2000"):
        attn(x, torch.ones(1, 2000, dtype=torch.bool))
    attn.path, attn.capture = "auto", True
    attn.local_impl = "blocked"  # the blocked path needs no N x N tensor, captured or not
    assert attn(x, torch.ones(1, 2000, dtype=torch.bool)).shape == (1, 2000, 8)


@pytest.mark.parametrize("window,impl", [(None, "auto"), (3, "dense"), (3, "blocked"), (1, "blocked")])
@pytest.mark.parametrize("score", ["scaled_dot", "gaussian"])
def test_relative_positions_equal_literal_formula_on_every_path(window, impl, score):
    torch.manual_seed(2)
    R = 2
    attn = MultiHeadSelfAttention(8, heads=2, score=score, window=window, relative_positions=R).eval()
    with torch.no_grad():
        attn.rel_bias.copy_(torch.randn(2, 2 * R + 1))
    attn.local_impl = impl
    n = 13
    x = torch.randn(2, n, 8)
    mask = torch.ones(2, n, dtype=torch.bool)
    mask[1, 9:] = False
    # bias[h, i, j] = rel_bias[h, clip(j - i, -R, R) + R], written out pair by pair
    fbias = torch.zeros(2, n, n)
    for h, i, j in itertools.product(range(2), range(n), range(n)):
        fbias[h, i, j] = attn.rel_bias[h, max(-R, min(R, j - i)) + R]
    fast = attn(x, mask)
    attn.capture = True
    ref = attn(x, mask)
    for b in range(2):
        m = int(mask[b].sum())
        idx = torch.arange(m)
        allowed = (idx[:, None] - idx[None, :]).abs() <= (window if window is not None else m)
        lit = literal_attention(attn, x[b, :m], allowed, fbias[:, :m, :m].detach())
        torch.testing.assert_close(fast[b, :m], lit, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(ref[b, :m], lit, atol=1e-5, rtol=1e-4)


def test_relative_positions_start_as_plain_attention_and_learn():
    torch.manual_seed(3)
    plain = MultiHeadSelfAttention(8, heads=2, window=4)
    rel = MultiHeadSelfAttention(8, heads=2, window=4, relative_positions=4)
    rel.load_state_dict(plain.state_dict(), strict=False)
    rel.local_impl = plain.local_impl = "blocked"
    x, mask = torch.randn(2, 30, 8), torch.ones(2, 30, dtype=torch.bool)
    torch.testing.assert_close(rel(x, mask), plain(x, mask))  # zero bias at initialization
    rel(x, mask)[:, 10].sum().backward()
    g = rel.rel_bias.grad
    assert g.shape == (2, 9) and torch.all(g.abs().sum(0) > 0)  # every offset -4..4 gets a gradient
    with pytest.raises(ValueError, match="relative_positions must be >= 0"):
        MultiHeadSelfAttention(8, relative_positions=-1)


# -- truncated attention for every score x normalize: blocked (N x window) vs dense reference --


@pytest.mark.parametrize("relative_positions", [0, 3])
@pytest.mark.parametrize("score,normalize", LEARNABLE)
def test_blocked_path_equals_dense_reference_for_every_combination(score, normalize, relative_positions):
    """Forward, captured weights (the band) and gradients, on a padded batch in training mode."""
    from vecset.backbone.attention import dense_to_band

    torch.manual_seed(7)
    window, n = 3, 23  # n > 4 x window, and not a multiple of the block width
    attn = MultiHeadSelfAttention(8, heads=2, score=score, normalize=normalize, window=window,
                                  relative_positions=relative_positions)
    if relative_positions:
        torch.nn.init.normal_(attn.rel_bias)  # it starts at zero: make it matter
    x = torch.randn(3, n, 8)
    mask = torch.ones(3, n, dtype=torch.bool)
    mask[1, 15:] = False
    mask[2, n - 4:] = False
    attn.capture = True

    def run(**how):
        attn.local_impl, attn.path = how.get("local_impl", "auto"), how.get("path", "auto")
        xi = x.clone().requires_grad_()
        out = attn(xi, mask)
        (out * mask[..., None]).pow(2).sum().backward()
        grads = [xi.grad] + [p.grad.clone() for p in attn.parameters()]
        attn.zero_grad()
        return out, attn.last_weights, grads

    out_b, band_b, grads_b = run(local_impl="blocked")
    out_r, band_r, grads_r = run(path="reference")
    assert band_b.shape == band_r.shape == (3, 2, n, 2 * window + 1)
    torch.testing.assert_close(out_b[mask], out_r[mask], atol=1e-5, rtol=1e-4)
    real_rows = mask[:, None, :, None].expand_as(band_b)
    torch.testing.assert_close(band_b[real_rows], band_r[real_rows], atol=1e-5, rtol=1e-4)
    for gb, gr in zip(grads_b, grads_r, strict=True):
        torch.testing.assert_close(gb, gr, atol=1e-4, rtol=1e-4)
    # the band holds exactly what the dense reference computes: disallowed keys are exact zeros
    attn.path, attn.capture = "reference", False
    _, dense = attn.reference(*attn._qkv(x), mask, None, window)  # (B, H, N, N)
    torch.testing.assert_close(dense_to_band(dense, window)[real_rows], band_r[real_rows])
    assert torch.all(band_b[0, :, 0, :window] == 0) and torch.all(band_b[1, :, 14, window + 1:] == 0)


def _no_pairwise_band(monkeypatch):
    import vecset.backbone.attention.module as A

    built = A.band_mask

    def guarded(n, window, device=None):
        assert n <= 4096, f"band_mask built a {n} x {n} mask"
        return built(n, window, device)

    monkeypatch.setattr(A, "band_mask", guarded)


@pytest.mark.parametrize("score,normalize", LEARNABLE)
def test_long_truncated_attention_needs_no_n_by_n_tensor(score, normalize, monkeypatch):
    """N = 40,000 with window 8: every combination runs in memory that grows with N x window
    (the dense band mask alone would be two 12.8 GB int64 tensors), and capture keeps the band."""
    _no_pairwise_band(monkeypatch)
    torch.manual_seed(8)
    n, window = 40_000, 8
    attn = MultiHeadSelfAttention(4, heads=1, score=score, normalize=normalize, window=window)
    attn.capture = True
    mask = torch.ones(1, n, dtype=torch.bool)
    mask[0, n - 100:] = False
    x = torch.randn(1, n, 4, requires_grad=True)
    out = attn(x, mask)
    assert out.shape == (1, n, 4) and bool(torch.isfinite(out).all())
    out[:, :100].sum().backward()  # the backward pass too
    assert x.grad[0, 100 + window:].abs().sum() == 0 and x.grad[0, :100].abs().sum() > 0
    x = x.detach()
    assert attn.last_weights.shape == (1, 1, n, 2 * window + 1)
    # one query far from the ends against the dense formulation on its neighbourhood alone
    i, lo, hi = 20_000, 20_000 - 2 * window, 20_000 + 2 * window + 1
    attn.capture, attn.path = False, "reference"
    local = attn(x[:, lo:hi], mask[:, lo:hi])
    torch.testing.assert_close(out[0, i], local[0, i - lo], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("how", [dict(path="reference"), dict(local_impl="dense")])
def test_too_large_dense_band_raises_before_building_the_mask(how, monkeypatch):
    import vecset.backbone.attention.memory as A

    _no_pairwise_band(monkeypatch)
    monkeypatch.setattr(A, "available_memory", lambda device: 2**30)  # pretend 1 GiB free
    attn = MultiHeadSelfAttention(4, heads=1, window=8)
    attn.path, attn.local_impl = how.get("path", "auto"), how.get("local_impl", "auto")
    n = 40_000
    with pytest.raises(MemoryError, match=r"needs about .* GiB .* 1 x 1 x 40000 x 40000 .* 1.0 GiB is free"):
        attn(torch.randn(1, n, 4), torch.ones(1, n, dtype=torch.bool))


def test_memory_check_counts_the_additive_scores_per_pair_vectors(monkeypatch):
    import vecset.backbone.attention.memory as A

    # additive scores hold tanh(W_q q_i + W_k k_j): a (B, H, N, N, a) tensor, a = 4 here, so the
    # dense path needs far more than its four (B, H, N, N) tensors (5.8 MB at N = 600)
    monkeypatch.setattr(A, "available_memory", lambda device: 10 * 2**20)
    attn = MultiHeadSelfAttention(4, heads=1, score="additive", additive_dim=4)
    with pytest.raises(MemoryError, match=r"1 x 1 x 600 x 600 x 4"):
        attn(torch.randn(1, 600, 4), torch.ones(1, 600, dtype=torch.bool))
    attn = MultiHeadSelfAttention(4, heads=1)  # a dot-family score fits
    assert attn(torch.randn(1, 600, 4), torch.ones(1, 600, dtype=torch.bool)).shape == (1, 600, 4)


def test_band_and_dense_weights_round_trip():
    from vecset.backbone.attention import band_to_dense, dense_to_band

    torch.manual_seed(9)
    n, window = 9, 2
    idx = torch.arange(n)
    dense = torch.rand(2, 3, n, n) * ((idx[:, None] - idx[None, :]).abs() <= window)
    band = dense_to_band(dense, window)
    assert band.shape == (2, 3, n, 2 * window + 1)
    assert band[0, 1, 4, 0] == dense[0, 1, 4, 2] and band[0, 1, 4, 4] == dense[0, 1, 4, 6]
    assert torch.all(band[:, :, 0, :window] == 0)  # keys before the first one
    torch.testing.assert_close(band_to_dense(band, window, n), dense)
    torch.testing.assert_close(band_to_dense(band[:, :, :4], window, n), dense[:, :, :4])


# -- combinations that cannot learn, and sizes ------------------------------------------------

def test_gaussian_score_with_relu_is_rejected_with_the_reason():
    # -|q - k|^2 / 2 is never positive: relu gives every pair weight 0 and gradient 0
    with pytest.raises(ValueError, match=r"score='gaussian' with normalize='relu'.*never positive"):
        MultiHeadSelfAttention(8, score="gaussian", normalize="relu")


@pytest.mark.parametrize("score,normalize", LEARNABLE)
def test_every_accepted_combination_gets_a_gradient_into_the_projections(score, normalize):
    torch.manual_seed(10)
    attn = MultiHeadSelfAttention(8, heads=2, score=score, normalize=normalize)
    attn(torch.randn(2, 6, 8), torch.ones(2, 6, dtype=torch.bool)).pow(2).sum().backward()
    D = 8
    wq, wk = attn.in_proj.weight.grad[:D], attn.in_proj.weight.grad[D:2 * D]
    assert wq.abs().sum() > 0 and wk.abs().sum() > 0


@pytest.mark.parametrize("kwargs,message", [
    (dict(d_model=0), "d_model must be >= 1, got 0"),
    (dict(heads=0), "heads must be >= 1, got 0"),
    (dict(heads=-2), "heads must be >= 1, got -2"),
    (dict(d_model=10, heads=3), r"d_model=10 must be divisible by heads=3 .*; heads that divide it: \[1, 2, 5, 10\]"),
    (dict(window=0), "window must be >= 1 .* got 0"),
    (dict(window=-1), "window must be >= 1 .* got -1"),
    (dict(dropout=1.0), r"dropout must be in \[0, 1\), got 1.0"),
    (dict(dropout=-0.1), r"dropout must be in \[0, 1\), got -0.1"),
    (dict(score="additive", additive_dim=0), "additive_dim must be >= 1 .* got 0"),
])
def test_attention_sizes_are_validated_naming_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadSelfAttention(**{"d_model": 8, **kwargs})
