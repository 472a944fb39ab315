"""The parts of a compact convolutional transformer (CCT, issue 46) for images: the convolutional
tokenizer against a hand-written torch reference."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from vecset.encoders import ConvTokenizer


@pytest.mark.parametrize(("layers", "tokens"), [(1, 14 * 14), (2, 7 * 7)])
def test_conv_tokenizer_tokens_for_28x28(layers: int, tokens: int):
    enc = ConvTokenizer(in_channels=1, d_model=16, layers=layers, hidden_channels=8)
    vs = enc({"image": torch.randn(3, 1, 28, 28)})
    assert vs.x.shape == (3, tokens, 16) and vs.mask.all() and vs.grid == enc.grid(28, 28)
    assert vs.pos[0, -1].tolist() == [(vs.grid[0] - 1) * 2**layers, (vs.grid[1] - 1) * 2**layers]


def test_conv_tokenizer_equals_hand_written_reference():
    torch.manual_seed(0)
    enc = ConvTokenizer(in_channels=2, d_model=6, layers=2, hidden_channels=5, positional="none")
    img = torch.randn(2, 2, 13, 10)  # odd sides: each pooling rounds up
    w1, w2 = enc.conv[0].weight, enc.conv[3].weight  # (5, 2, 3, 3), (6, 5, 3, 3)
    h = F.max_pool2d(F.relu(F.conv2d(img, w1, padding=1)), 3, stride=2, padding=1)  # (2, 5, 7, 5)
    h = F.max_pool2d(F.relu(F.conv2d(h, w2, padding=1)), 3, stride=2, padding=1)  # (2, 6, 4, 3)
    ref = h.permute(0, 2, 3, 1).reshape(2, 12, 6)  # row-major cells
    vs = enc({"image": img})
    assert vs.grid == (4, 3) == enc.grid(13, 10)
    torch.testing.assert_close(vs.x, ref)


def test_strided_tokenizer_equals_its_reference_on_the_pooled_grid():
    """downsample="stride": each block a 3x3 convolution of stride 2 (padding 1) and a ReLU, no
    pooling; the grid (odd sides round up) and the positions are the pooled tokenizer's."""
    torch.manual_seed(0)
    enc = ConvTokenizer(in_channels=2, d_model=6, layers=3, hidden_channels=5, positional="none", downsample="stride")
    img = torch.randn(2, 2, 28, 13)
    h = img
    for conv in (enc.conv[0], enc.conv[2], enc.conv[4]):
        h = F.relu(F.conv2d(h, conv.weight, stride=2, padding=1))
    assert not any(isinstance(m, torch.nn.MaxPool2d) for m in enc.conv)
    vs = enc({"image": img})
    pooled = ConvTokenizer(in_channels=2, d_model=6, layers=3, hidden_channels=5, positional="none")({"image": img})
    assert vs.grid == pooled.grid == (4, 2) == enc.grid(28, 13)
    torch.testing.assert_close(vs.pos, pooled.pos)
    torch.testing.assert_close(vs.x, h.permute(0, 2, 3, 1).reshape(2, 8, 6))
    with pytest.raises(ValueError, match="downsample must be 'pool' or 'stride', got 'avg'"):
        ConvTokenizer(1, 8, downsample="avg")


def test_conv_tokenizer_adds_the_positional_encoding_and_checks_channels():
    torch.manual_seed(0)
    plain = ConvTokenizer(1, 8, layers=1, positional="none")
    sin = ConvTokenizer(1, 8, layers=1, positional="sinusoidal")
    sin.load_state_dict(plain.state_dict())
    img = torch.randn(1, 1, 8, 8)
    torch.testing.assert_close(sin({"image": img}).x - plain({"image": img}).x, sin.positional(4, 4)[None])
    with pytest.raises(ValueError, match=r"^ConvTokenizer expects 1-channel images"):
        plain({"image": torch.randn(1, 3, 8, 8)})
    with pytest.raises(ValueError, match=r"^ConvTokenizer: layers must be >= 1"):
        ConvTokenizer(1, 8, layers=0)


def test_conv_tokenizer_declares_its_grid_and_image_sides():
    from vecset.contracts.abilities import Grid, ImageSides

    enc = ConvTokenizer(1, 8, layers=2)
    assert isinstance(enc, Grid) and isinstance(enc, ImageSides)
    assert enc.image_sides() == {"multiple_of": 4, "pad": False, "max_height": None, "max_width": None}



def test_channels_last_tokenizer_equals_the_contiguous_one():
    """channels_last (the default) changes the memory layout only: the same vectors and gradients
    as the contiguous tokenizer with the same weights; the weights stay channels-last through
    load_state_dict and copies, and checkpoints load across the two."""
    import copy

    torch.manual_seed(0)
    cl = ConvTokenizer(in_channels=1, d_model=16, layers=3, hidden_channels=8)
    plain = ConvTokenizer(in_channels=1, d_model=16, layers=3, hidden_channels=8, channels_last=False)
    plain.load_state_dict(cl.state_dict())
    weights = [m.weight for m in cl.conv if isinstance(m, torch.nn.Conv2d)]
    assert all(w.is_contiguous(memory_format=torch.channels_last) for w in weights)
    assert not any(w.is_contiguous() for w in weights[1:])  # the first has one input channel: both layouts
    assert all(m.weight.is_contiguous() for m in plain.conv if isinstance(m, torch.nn.Conv2d))
    img = torch.randn(4, 1, 28, 28)
    out_cl, out_plain = cl({"image": img}), plain({"image": img})
    torch.testing.assert_close(out_cl.x, out_plain.x)
    assert out_cl.grid == out_plain.grid == (4, 4)
    out_cl.x.square().sum().backward()
    out_plain.x.square().sum().backward()
    for a, b in zip(cl.parameters(), plain.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)
    fresh = ConvTokenizer(in_channels=1, d_model=16, layers=3, hidden_channels=8)
    fresh.load_state_dict(plain.state_dict())
    for m in (fresh, copy.deepcopy(cl)):
        assert all(c.weight.is_contiguous(memory_format=torch.channels_last) for c in m.conv if isinstance(c, torch.nn.Conv2d))
        torch.testing.assert_close(m({"image": img}).x, out_plain.x)
