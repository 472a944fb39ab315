"""Attention in parts: score functions (``scores``), normalizations (``normalizations``), the
execution paths (``paths``: reference, blocked, fused SDPA), the band and block geometry of
truncated attention (``bands``), memory checks (``memory``) and the module (``module``)."""

from vecset.backbone.attention.bands import (
    band_mask,
    band_to_dense,
    blocks_to_band,
    dense_to_band,
    from_blocks,
    to_blocks,
)
from vecset.backbone.attention.memory import (
    LONG_INPUT_HINT,
    available_memory,
    check_pairwise_memory,
)
from vecset.backbone.attention.module import MultiHeadSelfAttention
from vecset.backbone.attention.normalizations import (
    NORMALIZATIONS,
    NORMALIZES,
    Normalization,
    Normalize,
    ReLU,
    Sigmoid,
    Softmax,
    make_normalization,
)
from vecset.backbone.attention.paths import local_attention
from vecset.backbone.attention.scores import (
    SCORE_FUNCTIONS,
    SCORES,
    Additive,
    Dot,
    Gaussian,
    Locality,
    ScaledDot,
    Score,
    ScoreFunction,
    make_score,
)

__all__ = [
    "LONG_INPUT_HINT", "NORMALIZATIONS", "NORMALIZES", "SCORES", "SCORE_FUNCTIONS", "Additive", "Dot", "Gaussian",
    "Locality", "MultiHeadSelfAttention", "Normalization", "Normalize", "ReLU", "ScaledDot", "Score", "ScoreFunction", "Sigmoid",
    "Softmax", "available_memory", "band_mask", "band_to_dense", "blocks_to_band", "check_pairwise_memory",
    "dense_to_band", "from_blocks", "local_attention", "make_normalization", "make_score", "to_blocks",
]
