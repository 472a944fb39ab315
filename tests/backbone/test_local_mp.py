"""GPS block: GINE message passing over typed edges beside each block's attention
(``Backbone(local_mp="gine")``): the literal formula on a hand-computed graph, padding
invariance (eval and train), permutation equivariance, a clear error without edges."""

import pytest
import torch

from vecset.backbone import Backbone, VectorSet
from vecset.backbone.local_mp import GINEConv

D, T = 16, 6


def test_gine_on_a_three_atom_graph_is_the_hand_computed_formula():
    """0 -single- 1 =double= 2, D=2: m_i = h_i + sum_j ReLU(h_j + w_type(ij)), out = MLP(m)."""
    conv = GINEConv(d_model=2, bond_types=3)  # types: 0 none, 1 single, 2 double
    with torch.no_grad():
        conv.edge_proj.weight.copy_(torch.tensor([[0.0, 0.0, -3.0], [0.0, 1.0, 0.0]]))  # w1 = (0, 1), w2 = (-3, 0)
        conv.mlp[0].weight.copy_(torch.eye(2))
        conv.mlp[0].bias.zero_()
        conv.mlp[2].weight.copy_(torch.tensor([[1.0, 2.0], [0.0, 1.0]]))
        conv.mlp[2].bias.copy_(torch.tensor([0.5, 0.0]))
    h = torch.tensor([[[1.0, -1.0], [2.0, 0.0], [-1.0, 3.0]]])
    edges = torch.zeros(1, 3, 3, 3)
    edges[0, 1, 0, 1] = edges[0, 1, 1, 0] = 1.0
    edges[0, 2, 1, 2] = edges[0, 2, 2, 1] = 1.0
    mask = torch.ones(1, 3, dtype=torch.bool)
    # by hand: m0 = (1,-1) + ReLU((2,0)+(0,1)) = (3,0)
    #          m1 = (2,0) + ReLU((1,-1)+(0,1)) + ReLU((-1,3)+(-3,0)) = (2,0) + (1,0) + (0,3) = (3,3)
    #          m2 = (-1,3) + ReLU((2,0)+(-3,0)) = (-1,3)
    # MLP: ReLU(m) -> (3,0), (3,3), (0,3) -> [[1,2],[0,1]] x + (0.5, 0)
    torch.testing.assert_close(conv.messages(h, edges, mask), torch.tensor([[[2.0, 1.0], [1.0, 3.0], [0.0, 0.0]]]))
    torch.testing.assert_close(conv(h, edges, mask), torch.tensor([[[3.5, 0.0], [9.5, 3.0], [6.5, 3.0]]]))


def random_graph(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, D) node vectors and a (T, n, n) symmetric typed adjacency (a chain plus random bonds)."""
    types = torch.zeros(n, n, dtype=torch.long)
    for i in range(n - 1):
        types[i, i + 1] = types[i + 1, i] = int(torch.randint(1, T, (1,), generator=g))
    onehot = torch.nn.functional.one_hot(types, T).permute(2, 0, 1).float()
    onehot[0] = 0
    return torch.randn(n, D, generator=g), onehot


def gps(**kw) -> Backbone:
    torch.manual_seed(0)
    bb = Backbone(d_model=D, depth=2, heads=4, mlp_ratio=2.0, local_mp="gine", bond_types=T, **kw)
    with torch.no_grad():  # the GINE's own init is fine; make sure the branch matters in the checks
        for block in bb.blocks:
            block.local_mp.edge_proj.weight.normal_()
    return bb


@pytest.mark.parametrize("train", [False, True])
def test_padded_atoms_never_change_real_atoms(train):
    """A graph alone, and padded with 3 atoms of garbage values and edges pointing at them: the
    real atoms' outputs are equal (eval and train mode; dropout 0), padded outputs are zero."""
    bb = gps().train(train)
    g = torch.Generator().manual_seed(1)
    x, edges = random_graph(5, g)
    alone = bb(VectorSet(x=x[None], mask=torch.ones(1, 5, dtype=torch.bool), edges=edges[None])).x[0]
    xp = torch.cat([x, 100 * torch.randn(3, D, generator=g)])
    ep = torch.zeros(T, 8, 8)
    ep[:, :5, :5] = edges
    ep[1, 0, 6] = ep[1, 6, 0] = ep[2, 4, 7] = ep[2, 7, 4] = 1.0  # garbage: bonds into the padding
    mask = torch.tensor([[True] * 5 + [False] * 3])
    padded = bb(VectorSet(x=xp[None], mask=mask, edges=ep[None])).x[0]
    assert torch.isfinite(padded).all()
    torch.testing.assert_close(padded[:5], alone, atol=1e-5, rtol=1e-4)
    assert torch.all(padded[5:] == 0)
    # and the branch is there: without it the output differs
    plain = Backbone(d_model=D, depth=2, heads=4, mlp_ratio=2.0)
    plain.load_state_dict({k: v for k, v in bb.state_dict().items() if "local_mp" not in k and "norm_mp" not in k})
    assert not torch.allclose(plain.train(train)(VectorSet(x=x[None], mask=torch.ones(1, 5, dtype=torch.bool))).x[0],
                              alone, atol=1e-3)


@pytest.mark.parametrize("cls_token", [False, True])
def test_gps_backbone_is_permutation_equivariant(cls_token):
    bb = gps(cls_token=cls_token).eval()
    g = torch.Generator().manual_seed(2)
    x, edges = random_graph(7, g)
    bias = torch.randn(1, 4, 7, 7, generator=g)
    perm = torch.randperm(7, generator=g)
    out = bb(VectorSet(x=x[None], mask=torch.ones(1, 7, dtype=torch.bool), edges=edges[None], bias=bias)).x[0]
    out_p = bb(VectorSet(x=x[perm][None], mask=torch.ones(1, 7, dtype=torch.bool),
                         edges=edges[:, perm][:, :, perm][None], bias=bias[:, :, perm][:, :, :, perm])).x[0]
    k = 1 if cls_token else 0  # the CLS vector stays first and sees a permuted set: the same summary
    torch.testing.assert_close(out_p[k:], out[k:][perm], atol=1e-5, rtol=1e-4)
    if cls_token:
        torch.testing.assert_close(out_p[0], out[0], atol=1e-5, rtol=1e-4)


def test_gps_backbone_without_edges_is_a_clear_error():
    bb = gps()
    with pytest.raises(ValueError, match=r"^Backbone\(local_mp='gine', bond_types=6\) needs the graph's edges"):
        bb(VectorSet(x=torch.randn(1, 3, D), mask=torch.ones(1, 3, dtype=torch.bool)))
    with pytest.raises(ValueError, match="got 4 edge types"):
        bb(VectorSet(x=torch.randn(1, 3, D), mask=torch.ones(1, 3, dtype=torch.bool), edges=torch.zeros(1, 4, 3, 3)))
    with pytest.raises(ValueError, match="local_mp must be 'none' or 'gine', got 'gin'"):
        Backbone(d_model=D, local_mp="gin")


def test_gine_per_type_products_equal_the_literal_sum_over_bonds():
    """The dense per-bond-type form equals m_i = h_i + sum over bonded j of ReLU(h_j + W onehot(t_ij))."""
    torch.manual_seed(0)
    conv = GINEConv(D, T)
    g = torch.Generator().manual_seed(3)
    h, edges = random_graph(6, g)
    types = edges.argmax(0)  # (n, n): the bond type, 0 where there is none
    mask = torch.ones(1, 6, dtype=torch.bool)
    literal = h.clone()
    for i in range(6):
        for j in range(6):
            if edges[:, i, j].any():
                onehot = torch.nn.functional.one_hot(types[i, j], T).float()
                literal[i] += torch.relu(h[j] + conv.edge_proj(onehot))
    torch.testing.assert_close(h + conv.messages(h[None], edges[None], mask)[0], literal, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(conv(h[None], edges[None], mask)[0], conv.mlp(literal), atol=1e-5, rtol=1e-5)
