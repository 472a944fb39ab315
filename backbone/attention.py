"""Multi-head self-attention with swappable score functions and normalizations.

Vaswani et al. 2017, "Attention Is All You Need" (scaled dot-product, multi-head);
Bahdanau et al. 2015 (additive score); Nadaraya 1964 / Watson 1964 (Gaussian kernel
regression as attention). Q = W^q I, K = W^k I, V = W^v I, A = score(Q, K),
A' = normalize(A), O = A' V; heads concatenated and projected.

Three paths compute the same thing:
- the fast path: ``torch.nn.functional.scaled_dot_product_attention`` for every
  softmax-normalized dot-family score (scaled_dot, dot, and gaussian, whose
  -|q-k|^2/2 equals q.k - |k|^2/2 up to a per-query constant that softmax ignores),
  with a blocked local variant for truncated attention;
- the blocked path for truncated attention with any score and normalization (and when
  a windowed layer's weights are captured): each block of ``window`` queries is scored
  against only the 3 x window keys around it, so memory grows with N x window, not N^2;
- the reference path: the plain matrix formulation above, used for the other
  combinations without a window, for short windowed inputs (N <= 4 x window) and with
  a pairwise bias (already N x N); it checks the free memory before allocating.
A windowed layer's captured weights are its band, (B, H, N, 2 x window + 1).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Score = Literal["scaled_dot", "dot", "additive", "gaussian"]
Normalize = Literal["softmax", "relu", "sigmoid"]
SCORES = ("scaled_dot", "dot", "additive", "gaussian")
NORMALIZES = ("softmax", "relu", "sigmoid")


def available_memory(device: torch.device) -> int | None:
    """Bytes that can still be allocated on ``device`` (None where it cannot be told)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


LONG_INPUT_HINT = "use truncated attention (window=...) without a pairwise bias for long inputs, or shorter inputs"


def check_pairwise_memory(shape: tuple[int, ...], copies: float, element_size: int, device: torch.device,
                          what: str, hint: str = LONG_INPUT_HINT) -> None:
    """Raise a MemoryError before allocating pairwise tensors larger than the free memory."""
    need = copies * element_size * math.prod(shape)
    free = available_memory(device)
    if free is not None and need > free:
        raise MemoryError(
            f"{what} needs about {need / 2**30:.1f} GiB for its {' x '.join(map(str, shape))} "
            f"pairwise tensors, but only {free / 2**30:.1f} GiB is free on {device}; {hint}"
        )


def band_mask(n: int, window: int, device: torch.device | None = None) -> Tensor:
    """(N, N) bool, True where |i - j| <= window. N x N: callers check the memory first."""
    idx = torch.arange(n, device=device)
    # bool comparisons, not |i - j| in int64 (8 bytes a pair, twice)
    return (idx[None, :] >= idx[:, None] - window) & (idx[None, :] <= idx[:, None] + window)


def dense_to_band(weights: Tensor, window: int) -> Tensor:
    """(..., N, N) weights -> (..., N, 2 x window + 1) band: band[..., i, o] is the weight of
    key i + o - window (0 where that key is outside the sequence)."""
    N = weights.shape[-2]
    padded = F.pad(weights, (window, window))  # (..., N, N + 2W): key j in column j + W
    idx = torch.arange(N, device=weights.device)[:, None] + torch.arange(2 * window + 1, device=weights.device)
    return padded.gather(-1, idx.expand(*weights.shape[:-1], 2 * window + 1))


def band_to_dense(band: Tensor, window: int, n_keys: int) -> Tensor:
    """(..., Nq, 2 x window + 1) band of queries 0..Nq-1 -> (..., Nq, n_keys) weights, zero
    outside the band (Nq <= n_keys; memory Nq x n_keys: pass a few queries of a long input)."""
    Nq, width = band.shape[-2:]
    idx = torch.arange(Nq, device=band.device)[:, None] + torch.arange(width, device=band.device)  # key + W
    out = band.new_zeros(*band.shape[:-1], n_keys + 2 * window)
    out.scatter_(-1, idx.expand(band.shape), band)
    return out[..., window:window + n_keys]


def _key_windows(t: Tensor, W: int, nb: int) -> Tensor:
    """(B, H, N, X) -> (B*nb, H, 3W, X): block b's keys b*W - W .. b*W + 2W - 1 (zeros outside)."""
    B, H, N, X = t.shape
    t = F.pad(t, (0, 0, W, W + nb * W - N))  # (B, H, (nb+2)W, X)
    t = t.unfold(2, 3 * W, W).permute(0, 2, 1, 4, 3)  # (B, nb, H, 3W, X)
    return t.reshape(B * nb, H, 3 * W, X)


def to_blocks(q: Tensor, k: Tensor, v: Tensor, key_mask: Tensor,
              window: int) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Cut the sequence into blocks of ``window`` queries, each with the 3 x window keys around it.

    Blocks go into the batch dimension and heads stay in theirs, so one mask per block
    broadcasts over the heads. Every query keeps its own position, so no row is fully masked
    (fused kernels give NaN there).

    Shapes (W = window, nb = ceil(N / W)):
        q, k, v: (B, H, N, Dh), key_mask: (B, N) bool, True for real keys
        returns: qb (B*nb, H, W, Dh); kb, vb (B*nb, H, 3W, Dh); allowed (B*nb, 1, W, 3W) bool
            (|i - j| <= window and a real key); offsets (W, 3W) long, key minus query
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    B, H, N, Dh = q.shape
    W = window
    nb = math.ceil(N / W)
    qb = F.pad(q, (0, 0, 0, nb * W - N)).reshape(B, H, nb, W, Dh).transpose(1, 2).reshape(B * nb, H, W, Dh)
    kb, vb = _key_windows(k, W, nb), _key_windows(v, W, nb)
    km = _key_windows(key_mask[:, None, :, None], W, nb)[:, 0, :, 0]  # (B*nb, 3W)
    i = torch.arange(W, device=q.device)
    j = torch.arange(3 * W, device=q.device)
    offsets = (j[None, :] - W) - i[:, None]  # (W, 3W)
    allowed = (offsets.abs() <= window) & km[:, None, :]  # (B*nb, W, 3W)
    allowed = allowed | (offsets == 0)
    return qb, kb, vb, allowed[:, None], offsets


def from_blocks(t: Tensor, B: int, N: int) -> Tensor:
    """(B*nb, H, W, X) per-block query rows -> (B, H, N, X)."""
    _, H, W, X = t.shape
    nb = t.shape[0] // B
    return t.reshape(B, nb, H, W, X).transpose(1, 2).reshape(B, H, nb * W, X)[:, :, :N]


def blocks_to_band(weights: Tensor, B: int, N: int) -> Tensor:
    """(B*nb, H, W, 3W) block weights -> (B, H, N, 2W + 1) band (as ``dense_to_band``)."""
    W = weights.shape[-2]
    # query i of a block sits at key column i + W: its band is columns i .. i + 2W
    idx = torch.arange(W, device=weights.device)[:, None] + torch.arange(2 * W + 1, device=weights.device)
    return from_blocks(weights.gather(-1, idx.expand(*weights.shape[:2], W, 2 * W + 1)), B, N)


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
            attn_mask = attn_mask + _key_windows(key_bias[..., None], window, nb).transpose(-1, -2)  # (B*nb, H, 1, 3W)
        if offset_bias is not None:
            attn_mask = attn_mask + offset_bias(offsets).to(q.dtype)  # (H, W, 3W)
        attn_mask = torch.where(allowed, attn_mask, float("-inf"))  # (B*nb, H, W, 3W)
    out = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=attn_mask, dropout_p=dropout_p,
                                         scale=scale)  # (B*nb, H, W, Dh)
    return from_blocks(out, B, N)


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention over a padded set.

    Args:
        d_model: vector width D.
        heads: number of heads H (D must be divisible by H).
        score: ``scaled_dot`` (q.k/sqrt(Dh)), ``dot`` (q.k), ``additive``
            (w_v^T tanh(W_q q + W_k k)), ``gaussian`` (-|q-k|^2/2: softmax gives
            Nadaraya-Watson's Gaussian-kernel weights).
        normalize: ``softmax``, ``relu`` or ``sigmoid`` over the allowed keys. ``gaussian``
            with ``relu`` is rejected: the score is never positive, so nothing would learn.
        window: if set (>= 1), vector i attends only to j with |i - j| <= window (truncated
            attention for long sequences: memory grows with N x window for every score and
            normalization).
        dropout: dropout on the attention weights, in [0, 1).
        additive_dim: width of the additive score's hidden layer (None: the head width).
        relative_positions: R > 0 adds a learned score bias per head and key-minus-query
            offset, offsets clipped to [-R, R] (T5-style relative positions; it starts at
            zero). Vector order is then the sequence order: for speech frames and text,
            not for sets.

    Shapes:
        x: (B, N, D), mask: (B, N) bool, bias: (B, N, N) bool allowed-pairs or
        (B, N, N) / (B, H, N, N) float additive bias -> (B, N, D)
    """

    def __init__(self, d_model: int, heads: int = 4, score: Score = "scaled_dot",
                 normalize: Normalize = "softmax", window: int | None = None,
                 dropout: float = 0.0, additive_dim: int | None = None,
                 relative_positions: int = 0) -> None:
        super().__init__()
        if d_model < 1:
            raise ValueError(f"d_model must be >= 1, got {d_model}")
        if heads < 1:
            raise ValueError(f"heads must be >= 1, got {heads}")
        if d_model % heads:
            raise ValueError(f"d_model={d_model} must be divisible by heads={heads}")
        if score not in SCORES:
            raise ValueError(f"score must be one of {SCORES}, got {score!r}")
        if normalize not in NORMALIZES:
            raise ValueError(f"normalize must be one of {NORMALIZES}, got {normalize!r}")
        if score == "gaussian" and normalize == "relu":
            # relu'(s) = 0 for s <= 0: the output is the out_proj bias and no gradient reaches
            # the projections (nor a relative-position or graph bias: they start at zero)
            raise ValueError(
                "score='gaussian' with normalize='relu' cannot learn: the Gaussian score -|q - k|^2 / 2 "
                "is never positive, so relu gives every pair weight 0 and the projections gradient 0; "
                "use normalize='softmax' (Nadaraya-Watson weights) or 'sigmoid'"
            )
        if window is not None and window < 1:
            raise ValueError(f"window must be >= 1 (vector i sees j with |i - j| <= window) or None, got {window}")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        if additive_dim is not None and additive_dim < 1:
            raise ValueError(f"additive_dim must be >= 1 (or None: the head width), got {additive_dim}")
        if relative_positions < 0:
            raise ValueError(f"relative_positions must be >= 0, got {relative_positions}")
        self.d_model, self.heads, self.head_dim = d_model, heads, d_model // heads
        self.score, self.normalize, self.window, self.dropout = score, normalize, window, dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.additive_dim = additive_dim or self.head_dim
        if score == "additive":
            a = self.additive_dim
            self.add_wq = nn.Parameter(torch.randn(heads, self.head_dim, a) / math.sqrt(self.head_dim))
            self.add_wk = nn.Parameter(torch.randn(heads, self.head_dim, a) / math.sqrt(self.head_dim))
            self.add_wv = nn.Parameter(torch.randn(heads, a) / math.sqrt(a))
        self.relative_positions = relative_positions
        if relative_positions:
            self.rel_bias = nn.Parameter(torch.zeros(heads, 2 * relative_positions + 1))
        # capture: when True, the reference or blocked path runs and keeps the weights:
        # (B, H, N, N), or the band (B, H, N, 2 x window + 1) when a window applied
        self.capture = False
        self.last_weights: Tensor | None = None
        self.last_window: int | None = None
        # "reference" forces the plain matrix path (benchmarks and tests compare the two)
        self.path: Literal["auto", "reference"] = "auto"
        # "auto" uses a blocked path for long windowed inputs (N > 4 x window); tests force either
        self.local_impl: Literal["auto", "blocked", "dense"] = "auto"

    # -- pieces shared by both paths -------------------------------------------------
    def _qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        B, N, D = x.shape
        qkv = self.in_proj(x).view(B, N, 3, self.heads, self.head_dim)
        # views, no copies; unbinding the (3) axis in place (not permuting it to the front)
        # lets backward stack the three gradients straight into in_proj's (B, N, 3D) layout:
        # one copy, where permute + unbind took a cat and then a clone
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))  # each (B, H, N, Dh)
        return q, k, v

    def offset_bias(self, offsets: Tensor) -> Tensor:
        """(H, *offsets.shape): the learned relative-position score term for key-minus-query
        offsets (clipped to +-relative_positions)."""
        R = self.relative_positions
        return self.rel_bias[:, offsets.clamp(-R, R) + R]

    def _with_relative(self, fbias: Tensor | None, n: int, device: torch.device) -> Tensor | None:
        """fbias plus the (1, H, N, N) relative-position term, where there is one."""
        if not self.relative_positions:
            return fbias
        idx = torch.arange(n, device=device)
        rel = self.offset_bias(idx[None, :] - idx[:, None])[None]
        return rel if fbias is None else fbias + rel

    def _masks(self, mask: Tensor, bias: Tensor | None, window: int | None) -> tuple[Tensor, Tensor | None]:
        """allowed (B, 1, N|1, N) bool and an optional float bias (B, 1|H, N, N)."""
        B, N = mask.shape
        allowed = mask[:, None, None, :]  # (B, 1, 1, N)
        restricted = False
        if window is not None:
            allowed = allowed & band_mask(N, window, mask.device)
            restricted = True
        fbias = None
        if bias is not None:
            if bias.dtype == torch.bool:
                allowed = allowed & bias[:, None]
                restricted = True
            else:
                fbias = bias[:, None] if bias.dim() == 3 else bias
        if restricted:
            # a vector always sees itself: no row is fully masked (NaN in fused kernels)
            allowed = allowed | torch.eye(N, dtype=torch.bool, device=mask.device)
        return allowed, fbias

    def _scores(self, q: Tensor, k: Tensor) -> Tensor:
        """(B, H, N, N) raw scores, the plain matrix formulation."""
        if self.score == "scaled_dot":
            return q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if self.score == "dot":
            return q @ k.transpose(-1, -2)
        if self.score == "gaussian":
            return -torch.cdist(q, k).pow(2) / 2
        # additive: w_v^T tanh(W_q q_i + W_k k_j), per head
        qa = torch.einsum("bhnd,hda->bhna", q, self.add_wq)
        ka = torch.einsum("bhnd,hda->bhna", k, self.add_wk)
        return torch.einsum("bhija,ha->bhij", torch.tanh(qa[:, :, :, None] + ka[:, :, None]), self.add_wv)

    def _normalize(self, scores: Tensor, allowed: Tensor) -> Tensor:
        if self.normalize == "softmax":
            return scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
        act = torch.relu(scores) if self.normalize == "relu" else torch.sigmoid(scores)
        return act * allowed  # disallowed pairs get exactly zero weight

    def _check_dense_memory(self, q: Tensor, k: Tensor) -> None:
        """Raise a MemoryError, with the sizes, before the reference path allocates anything."""
        # scores, weights and their gradients: about four (B, H, queries, keys) tensors (the
        # key count from k: cross-attention's memory can be much longer than its queries)
        shape, copies = (*q.shape[:3], k.shape[-2]), 4.0
        if self.score == "additive":
            # tanh(W_q q_i + W_k k_j) holds additive_dim values per pair: the sum, the tanh
            # (kept for backward) and its gradient, beside the four pairwise tensors
            shape, copies = (*shape, self.additive_dim), 3 + 4 / self.additive_dim
        check_pairwise_memory(shape, copies, q.element_size(), q.device, "the reference attention path")

    def reference(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor, bias: Tensor | None,
                  window: int | None) -> tuple[Tensor, Tensor]:
        """O = normalize(score(Q, K) + bias) V, the plain matrix formulation.

        Shapes: q (B, H, Nq, Dh), k, v (B, H, Nk, Dh), mask (B, Nk) bool, bias as in the class
        -> out (B, H, Nq, Dh), weights (B, H, Nq, Nk)
        """
        self._check_dense_memory(q, k)  # before the N x N masks, too
        allowed, fbias = self._masks(mask, bias, window)
        fbias = self._with_relative(fbias, q.shape[-2], q.device)
        scores = self._scores(q, k)
        if fbias is not None:
            scores = scores + fbias
        weights = self._normalize(scores, allowed)
        drop = F.dropout(weights, self.dropout, self.training)
        return drop @ v, weights

    def _use_blocked(self, n: int, window: int | None, bias: Tensor | None) -> bool:
        """Whether windowed attention runs in blocks: a pairwise bias is already N x N, and
        below 4 x window positions the dense band is as small."""
        if window is None or bias is not None or self.path == "reference":
            return False
        return self.local_impl == "blocked" or (self.local_impl == "auto" and n > 4 * window)

    def _blocked(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor, window: int) -> tuple[Tensor, Tensor | None]:
        """Truncated attention with any score and normalization, in blocks (``to_blocks``):
        (B, H, N, Dh) -> out (B, H, N, Dh), and the band (B, H, N, 2W + 1) when capturing."""
        B, H, N, _ = q.shape
        qb, kb, vb, allowed, offsets = to_blocks(q, k, v, mask, window)
        scores = self._scores(qb, kb)  # (B*nb, H, W, 3W)
        if self.relative_positions:
            scores = scores + self.offset_bias(offsets)  # (H, W, 3W)
        weights = self._normalize(scores, allowed)
        drop = F.dropout(weights, self.dropout, self.training)
        out = from_blocks(drop @ vb, B, N)  # (B, H, N, Dh)
        return out, blocks_to_band(weights, B, N) if self.capture else None

    def _fast(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor, bias: Tensor | None,
              window: int | None, padded: bool | None = None) -> Tensor:
        B, H, N, _ = q.shape
        scale = 1 / math.sqrt(self.head_dim) if self.score == "scaled_dot" else 1.0
        key_bias = -k.pow(2).sum(-1) / 2 if self.score == "gaussian" else None  # (B, H, N)
        p = self.dropout if self.training else 0.0
        rel = self.offset_bias if self.relative_positions else None
        if self._use_blocked(N, window, bias):
            return local_attention(q, k, v, mask, window, scale, key_bias, p, rel)
        if window is None and bias is None and key_bias is None and rel is None:
            if padded is None:
                padded = not bool(mask.all())
            if not padded:
                # no padding and no structure: no mask at all lets SDPA pick its fastest kernel
                return F.scaled_dot_product_attention(q, k, v, dropout_p=p, scale=scale)
        if window is not None or bias is not None or rel is not None:
            # a bool (B, N, N) mask, or a float (B, H, N, N) one when a bias enters it
            float_mask = key_bias is not None or rel is not None or (bias is not None and bias.is_floating_point())
            check_pairwise_memory((B, H if float_mask else 1, N, N), 1, q.element_size() if float_mask else 1,
                                  q.device, "dense masked attention")
        allowed, fbias = self._masks(mask, bias, window)
        fbias = self._with_relative(fbias, N, q.device)
        if fbias is None and key_bias is None:
            attn_mask = allowed
        else:
            attn_mask = torch.zeros((), dtype=q.dtype, device=q.device)
            if fbias is not None:
                attn_mask = attn_mask + fbias
            if key_bias is not None:
                attn_mask = attn_mask + key_bias[:, :, None, :]
            attn_mask = torch.where(allowed, attn_mask, float("-inf"))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=p, scale=scale)

    def forward(self, x: Tensor, mask: Tensor, bias: Tensor | None = None, window: int | None = None,
                padded: bool | None = None) -> Tensor:
        """``window`` (from the VectorSet: the encoder's choice) overrides the module's own.
        ``padded``: whether ``mask`` has any False entry (None: looked up here, a host sync on
        a GPU and a graph break under torch.compile; the Backbone looks it up once for all
        blocks)."""
        B, N, D = x.shape
        window = self.window if window is None else window
        q, k, v = self._qkv(x)  # (B, H, N, Dh)
        fast = self.normalize == "softmax" and self.score != "additive"
        weights = None
        if fast and not self.capture and self.path == "auto":
            out = self._fast(q, k, v, mask, bias, window, padded)
        elif self._use_blocked(N, window, bias):
            out, weights = self._blocked(q, k, v, mask, window)
        else:
            out, weights = self.reference(q, k, v, mask, bias, window)
            if self.capture and window is not None:
                weights = dense_to_band(weights, window)  # the same form whichever path ran
        if self.capture:
            self.last_weights, self.last_window = weights.detach(), window
        out = out.transpose(1, 2).reshape(B, N, D)  # (B, N, D)
        return self.out_proj(out)

    def captured_weights(self, queries: int | None = None) -> Tensor:
        """(B, H, Nq, N) weights of the last forward run with ``capture`` on, for its first
        ``queries`` queries (all when None). A windowed layer kept only its band: it is expanded
        here, Nq x N, so pass ``queries`` for a long input."""
        w = self.last_weights
        if w is None:
            raise RuntimeError("no attention weights were captured: set capture = True and run forward first")
        n = w.shape[-2]
        if queries is not None:
            w = w[:, :, :queries]
        if self.last_window is None:
            return w
        check_pairwise_memory((*w.shape[:3], n), 1, w.element_size(), w.device,
                              "expanding the captured band of a windowed layer",
                              hint="pass queries=... to expand only the first queries")
        return band_to_dense(w, self.last_window, n)
