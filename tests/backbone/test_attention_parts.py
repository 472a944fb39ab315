"""The attention package: score and normalization classes chosen by the config's names, and
checkpoints written before the split (by backbone/attention.py) still load and compute the same."""

from pathlib import Path

import pytest
import torch

from vecset.backbone import Backbone, VectorSet
from vecset.backbone.attention import (
    NORMALIZES,
    SCORES,
    Additive,
    Dot,
    Gaussian,
    Locality,
    MultiHeadSelfAttention,
    ReLU,
    ScaledDot,
    Sigmoid,
    Softmax,
)

# written by the code before the package (commit 63ad047, backbone/attention.py): per case the
# Backbone's kwargs, its state_dict, an input and the eval output
OLD_STATES = Path(__file__).parent / "data" / "backbone_state_before_attention_package.pt"


def test_names_choose_classes():
    assert SCORES == ("scaled_dot", "dot", "additive", "gaussian", "locality")
    assert NORMALIZES == ("softmax", "relu", "sigmoid")
    for name, cls in zip(SCORES, (ScaledDot, Dot, Additive, Gaussian, Locality), strict=True):
        attn = MultiHeadSelfAttention(8, heads=2, score=name, normalize="sigmoid")
        assert type(attn.score_fn) is cls and attn.score == name
    for name, cls in zip(NORMALIZES, (Softmax, ReLU, Sigmoid), strict=True):
        attn = MultiHeadSelfAttention(8, heads=2, normalize=name)
        assert type(attn.normalization) is cls and attn.normalize == name


def test_unknown_names_are_clear_errors():
    with pytest.raises(ValueError, match=r"score must be one of \('scaled_dot', 'dot', 'additive', 'gaussian', 'locality'\), "
                       r"got 'cosine'"):
        MultiHeadSelfAttention(8, heads=2, score="cosine")
    with pytest.raises(ValueError, match=r"normalize must be one of \('softmax', 'relu', 'sigmoid'\), got 'tanh'"):
        MultiHeadSelfAttention(8, heads=2, normalize="tanh")


def test_only_dot_family_softmax_is_fused():
    for score in SCORES:
        for normalize in NORMALIZES:
            if (score, normalize) == ("gaussian", "relu"):
                continue
            attn = MultiHeadSelfAttention(8, heads=2, score=score, normalize=normalize)
            assert attn.fused == (score not in ("additive", "locality") and normalize == "softmax")


@pytest.mark.parametrize("case", ["additive_sigmoid_relative", "gaussian_softmax", "scaled_dot_cls"])
def test_checkpoints_from_before_the_package_load_and_agree(case):
    saved = torch.load(OLD_STATES, weights_only=True)[case]
    bb = Backbone(d_model=8, depth=2, heads=2, mlp_ratio=2.0, **saved["kwargs"]).eval()
    assert sorted(bb.state_dict()) == sorted(saved["state_dict"])  # the same keys, nothing renamed
    bb.load_state_dict(saved["state_dict"])  # strict
    with torch.no_grad():
        out = bb(VectorSet(saved["x"], saved["mask"]))
    assert out.x.shape == saved["out"].shape
    torch.testing.assert_close(out.x[out.mask], saved["out"][out.mask], atol=1e-6, rtol=1e-5)
