"""Multi-head self-attention with swappable score functions and normalizations.

Vaswani et al. 2017, "Attention Is All You Need" (scaled dot-product, multi-head);
Bahdanau et al. 2015 (additive score); Nadaraya 1964 / Watson 1964 (Gaussian kernel
regression as attention). Q = W^q I, K = W^k I, V = W^v I, A = score(Q, K),
A' = normalize(A), O = A' V; heads concatenated and projected.

The score (``scores.py``) and the normalization (``normalizations.py``) are classes chosen
by name; which of the three paths (``paths.py``) computes them is decided here:
- fused: SDPA for every softmax-normalized dot-family score (scaled_dot, dot, gaussian),
  blocked for truncated attention on long inputs;
- blocked: truncated attention with any score and normalization (and when a windowed layer's
  weights are captured): memory grows with N x window, not N^2;
- reference: the plain matrix formulation, for the other combinations without a window, for
  short windowed inputs (N <= 4 x window) and with a pairwise bias (already N x N); it checks
  the free memory before allocating.
A windowed layer's captured weights are its band, (B, H, N, 2 x window + 1).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from vecset.backbone.attention import paths
from vecset.backbone.attention.bands import band_mask, band_to_dense, dense_to_band
from vecset.backbone.attention.memory import check_pairwise_memory
from vecset.backbone.attention.normalizations import Normalize, make_normalization
from vecset.backbone.attention.scores import Score, make_score
from vecset.backbone.tracing import is_exporting


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention over a padded set.

    Args:
        d_model: vector width D.
        heads: number of heads H (D must be divisible by H).
        score: ``scaled_dot`` (q.k/sqrt(Dh)), ``dot`` (q.k), ``additive``
            (w_v^T tanh(W_q q + W_k k)), ``gaussian`` (-|q-k|^2/2: softmax gives
            Nadaraya-Watson's Gaussian-kernel weights), ``locality`` (locality self-attention:
            q.k times a learned per-head temperature, each vector's score with itself masked;
            ``scores.Locality``).
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
            fits = [h for h in range(1, d_model + 1) if d_model % h == 0]
            raise ValueError(f"d_model={d_model} must be divisible by heads={heads} (each head attends with "
                             f"d_model / heads of the width); heads that divide it: {fits}")
        self.d_model, self.heads, self.head_dim = d_model, heads, d_model // heads
        self.score_fn = make_score(score, heads, self.head_dim, additive_dim)
        self.normalization = make_normalization(normalize)
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
        if relative_positions < 0:
            raise ValueError(f"relative_positions must be >= 0, got {relative_positions}")
        # the names, as configured (YAML and checkpoints' hyperparameters carry these strings)
        self.score, self.normalize, self.window, self.dropout = score, normalize, window, dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.additive_dim = self.score_fn.additive_dim or additive_dim or self.head_dim
        self.score_fn.add_parameters(self)  # add_wq, add_wk, add_wv for the additive score
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

    @property
    def fused(self) -> bool:
        """Whether SDPA computes this score and normalization (when nothing forces another path)."""
        return self.score_fn.sdpa and self.normalization.sdpa and not self.capture and self.path == "auto"

    def _dropout_p(self) -> float:
        return self.dropout if self.training else 0.0

    # -- pieces shared by the paths ------------------------------------------------------
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

    def reference(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor, bias: Tensor | None,
                  window: int | None) -> tuple[Tensor, Tensor]:
        """O = normalize(score(Q, K) + bias) V, the plain matrix formulation.

        Shapes: q (B, H, Nq, Dh), k, v (B, H, Nk, Dh), mask (B, Nk) bool, bias as in the class
        -> out (B, H, Nq, Dh), weights (B, H, Nq, Nk)
        """
        # before the N x N masks, too; the key count from k: cross-attention's memory can be
        # much longer than its queries
        shape, copies = self.score_fn.pair_memory((*q.shape[:3], k.shape[-2]))
        check_pairwise_memory(shape, copies, q.element_size(), q.device, "the reference attention path")
        allowed, fbias = self._masks(mask, bias, window)
        fbias = self._with_relative(fbias, q.shape[-2], q.device)
        return paths.reference(q, k, v, allowed, fbias, self.score_fn, self.normalization, self,
                               self._dropout_p())

    def _use_blocked(self, n: int, window: int | None, bias: Tensor | None) -> bool:
        """Whether windowed attention runs in blocks: a pairwise bias is already N x N, and
        below 4 x window positions the dense band is as small."""
        if window is None or bias is not None or self.path == "reference" or is_exporting():
            return False  # exporting: the dense band holds for every N (a graph cannot choose by N)
        return self.local_impl == "blocked" or (self.local_impl == "auto" and n > 4 * window)

    def _fast(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor, bias: Tensor | None,
              window: int | None, padded: bool | None = None) -> Tensor:
        """The fused (SDPA) path, dense or blocked; on bf16 inputs where fp32 kernels are faster
        (``paths.sdpa_in_fp32``) it runs them in fp32 and returns bf16."""
        if paths.sdpa_in_fp32(q):
            with torch.autocast(q.device.type, enabled=False):  # autocast would cast SDPA's inputs back to bf16
                return self._fast(q.float(), k.float(), v.float(), mask, bias, window, padded).to(q.dtype)
        B, H, N, _ = q.shape
        scale = self.score_fn.sdpa_scale()
        key_bias = self.score_fn.key_bias(k)  # (B, H, N) or None
        p = self._dropout_p()
        rel = self.offset_bias if self.relative_positions else None
        if self._use_blocked(N, window, bias):
            return paths.local_attention(q, k, v, mask, window, scale, key_bias, p, rel)
        if window is None and bias is None and key_bias is None and rel is None:
            if padded is None:
                padded = not bool(mask.all())
            if not padded:
                # no padding and no structure: no mask at all lets SDPA pick its fastest kernel
                return paths.fused_dense(q, k, v, None, None, None, scale, p)
        if window is not None or bias is not None or rel is not None:
            # a bool (B, N, N) mask, or a float (B, H, N, N) one when a bias enters it
            float_mask = key_bias is not None or rel is not None or (bias is not None and bias.is_floating_point())
            check_pairwise_memory((B, H if float_mask else 1, N, N), 1, q.element_size() if float_mask else 1,
                                  q.device, "dense masked attention")
        allowed, fbias = self._masks(mask, bias, window)
        fbias = self._with_relative(fbias, N, q.device)
        return paths.fused_dense(q, k, v, allowed, fbias, key_bias, scale, p)

    def forward(self, x: Tensor, mask: Tensor, bias: Tensor | None = None, window: int | None = None,
                padded: bool | None = None) -> Tensor:
        """``window`` (from the VectorSet: the encoder's choice) overrides the module's own.
        ``padded``: whether ``mask`` has any False entry (None: looked up here, a host sync on
        a GPU and a graph break under torch.compile; the Backbone looks it up once for all
        blocks)."""
        B, N, D = x.shape
        window = self.window if window is None else window
        q, k, v = self._qkv(x)  # (B, H, N, Dh)
        weights = None
        if self.fused:
            out = self._fast(q, k, v, mask, bias, window, padded)
        elif self._use_blocked(N, window, bias):
            rel = self.offset_bias if self.relative_positions else None
            out, weights = paths.blocked(q, k, v, mask, window, self.score_fn, self.normalization, self,
                                         self._dropout_p(), rel, band=self.capture)
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
