"""GridResNet, the convolutional baseline in the backbone's slot: it reads the vectors' grid
from their positions, so vector order and padding do not change a real vector's output."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from vecset.backbone import GridResNet, VectorSet
from vecset.backbone.baselines import grid_cells
from vecset.encoders import PatchEncoder, PixelEncoder


def _net(d: int = 8, **kw) -> GridResNet:
    torch.manual_seed(0)
    return GridResNet(d, widths=(8, 16), blocks=1, **kw).eval()


def test_shapes_one_output_per_vector_for_pixels_and_patches():
    img = torch.randn(2, 1, 28, 28)
    torch.manual_seed(0)
    pix = PixelEncoder(1, 8, positional="none")({"image": img})
    out = _net()(pix)
    assert out.x.shape == (2, 784, 8) and torch.equal(out.mask, pix.mask) and torch.equal(out.pos, pix.pos)
    patches = PatchEncoder(1, 8, 4, positional="none")({"image": img})  # 7x7 patches, odd sides
    assert _net()(patches).x.shape == (2, 49, 8)
    assert grid_cells(patches)[1:] == (7, 7)


def test_equals_the_convolutions_run_on_the_image_grid():
    net = _net()
    torch.manual_seed(1)
    grid = torch.randn(2, 8, 6, 5)  # (B, D, H, W)
    vs = PixelEncoder(1, 8, positional="none")({"image": torch.zeros(2, 1, 6, 5)})
    vs = VectorSet(x=grid.flatten(2).transpose(1, 2), mask=vs.mask, pos=vs.pos)
    h = net.stem(grid)
    occ = torch.ones(2, 1, 6, 5)
    for layer in net.layers:
        h, occ = layer(h, occ)
    assert h.shape == (2, 16, 3, 3)  # the second stage halves 6x5 to 3x3
    r, c = torch.meshgrid(torch.arange(6), torch.arange(5), indexing="ij")
    ref = h[:, :, r.flatten() // 2, c.flatten() // 2].transpose(1, 2)  # each vector's covering cell
    torch.testing.assert_close(net(vs).x, net.norm(net.proj(ref)))


def test_vector_order_does_not_matter():
    net = _net()
    vs = PixelEncoder(1, 8, positional="none")({"image": torch.randn(2, 1, 6, 6)})
    perm = torch.randperm(36)
    shuffled = VectorSet(x=vs.x[:, perm], mask=vs.mask[:, perm], pos=vs.pos[:, perm])
    torch.testing.assert_close(net(shuffled).x, net(vs).x[:, perm])


def test_padding_and_a_larger_image_in_the_batch_do_not_change_real_outputs():
    net = _net()
    torch.manual_seed(2)
    enc = PixelEncoder(1, 8, positional="none")
    small, big = enc({"image": torch.randn(1, 1, 4, 6)}), enc({"image": torch.randn(1, 1, 6, 6)})
    alone = net(small).x
    # the 4x6 image padded to the 36 vectors of the 6x6 one, padding holding garbage values and positions
    x = torch.cat([small.x, torch.randn(1, 12, 8) * 100], 1)
    pos = torch.cat([small.pos, torch.randint(0, 6, (1, 12, 2)).float()], 1)
    mask = torch.cat([small.mask, torch.zeros(1, 12, dtype=torch.bool)], 1)
    batch = VectorSet(x=torch.cat([x, big.x]), mask=torch.cat([mask, big.mask]), pos=torch.cat([pos, big.pos]))
    out = net(batch).x
    torch.testing.assert_close(out[0, :24], alone[0], atol=1e-5, rtol=1e-5)
    assert out[0, 24:].abs().max() == 0  # padded positions are zero
    torch.testing.assert_close(out[1], net(big).x[0], atol=1e-5, rtol=1e-5)


def test_needs_grid_positions_and_no_cls():
    net = _net()
    with pytest.raises(ValueError, match=r"reads the \(row, column\) of every vector from VectorSet.pos"):
        net(VectorSet(x=torch.randn(1, 4, 8), mask=torch.ones(1, 4, dtype=torch.bool)))
    vs = PixelEncoder(1, 8)({"image": torch.randn(1, 1, 2, 2)})
    with pytest.raises(ValueError, match=r"a set with a CLS vector"):
        net(VectorSet(x=vs.x, mask=vs.mask, pos=vs.pos, cls=True))
    scattered = torch.tensor([[[0.0, 0.0], [1.0, 3.0], [2.0, 5.0], [7.0, 1.0]]])
    with pytest.raises(ValueError, match=r"make a 4x4 grid for sets of 4 vectors"):
        net(VectorSet(x=torch.randn(1, 4, 8), mask=torch.ones(1, 4, dtype=torch.bool), pos=scattered))
    twice = torch.tensor([[[0.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.0, 0.0]]])
    with pytest.raises(ValueError, match=r"two vectors of one set sit on the same grid position"):
        net(VectorSet(x=torch.randn(1, 4, 8), mask=torch.ones(1, 4, dtype=torch.bool), pos=twice))
    with pytest.raises(ValueError, match=r"widths must be a non-empty list"):
        GridResNet(8, widths=())


def test_learns_in_a_training_step():
    net = GridResNet(8, widths=(8, 16), blocks=1).train()
    vs = PixelEncoder(1, 8, positional="none")({"image": torch.randn(4, 1, 8, 8)})
    before = [p.detach().clone() for p in net.parameters()]
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    net(vs).x.pow(2).mean().backward()
    opt.step()
    assert all(not torch.equal(a, b) for a, b in zip(before, net.parameters(), strict=True) if b.grad is not None)
    assert isinstance(net.layers[1].shortcut, nn.Sequential)  # width and resolution change: 1x1 projection



@pytest.mark.parametrize("encoder", [PixelEncoder(1, 8, positional="none"), PatchEncoder(1, 8, 4, positional="none")],
                         ids=["pixels", "patches"])
def test_an_encoders_declared_grid_gives_the_cells_of_the_positions_without_a_read(encoder):
    """Image encoders declare their grid (VectorSet.grid): the cells are those found from the
    positions, the outputs the same, and nothing is read back from the device (no unique, no
    mask indexing, no bool)."""
    from dataclasses import replace

    from torch.overrides import TorchFunctionMode

    reads = []

    class Reads(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", "")
            if name in ("__bool__", "item", "tolist", "unique", "nonzero", "_unique2") or (
                    name == "__getitem__" and isinstance(args[1], torch.Tensor) and args[1].dtype == torch.bool):
                reads.append(name)
            return func(*args, **(kwargs or {}))

    torch.manual_seed(0)
    vs = encoder({"image": torch.randn(2, 1, 12, 8)})
    assert vs.grid == ((12, 8) if isinstance(encoder, PixelEncoder) else (3, 2)) and vs.padded is False
    found = replace(vs, grid=None)
    cells, gh, gw = grid_cells(found)
    with Reads():
        declared = grid_cells(vs)
    assert not reads
    assert torch.equal(declared[0], cells) and declared[1:] == (gh, gw)
    net = _net()
    assert torch.equal(net(vs).x, net(found).x)
    with pytest.raises(ValueError, match=r"VectorSet.grid \(3, 3\) must hold the N = 96 vectors"):
        replace(vs, grid=(3, 3)) if isinstance(encoder, PixelEncoder) else VectorSet(x=torch.zeros(1, 96, 8), mask=torch.ones(1, 96, dtype=torch.bool), grid=(3, 3))
