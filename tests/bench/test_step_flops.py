"""bench/: the training step's FLOP count that the attention benchmark divides by."""

import torch
from torch.utils.flop_counter import FlopCounterMode

from bench.attention import build, kernels_only_step
from bench.common import step_flops
from vecset.backbone import VectorSet


def counted(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def test_step_flops_equal_torchs_count_of_a_plain_training_step():
    """On the plain path (explicit matmuls: no kernel recomputes QK^T in backward), torch's
    FLOP counter over forward + backward gives exactly ``step_flops``."""
    B, N, d, depth, heads, mlp = 3, 10, 16, 2, 4, 2
    net = build("reference", d, depth, heads, mlp).train()
    x = torch.randn(B, N, d)
    mask = torch.ones(B, N, dtype=torch.bool)
    assert counted(lambda: net(VectorSet(x=x, mask=mask)).x.pow(2).mean().backward()) == step_flops(
        B, N, d, depth, mlp)


def test_kernels_only_runs_the_fused_steps_projections_and_mlp():
    """``kernels_only`` (the bound) does the fused step's matrix multiplies. torch's counter
    has no formula for the CPU flash-attention kernel, so both counts are the dense part:
    ``step_flops`` less the attention's 12 B N^2 d a block."""
    n, d, depth, heads, mlp = 256, 16, 2, 4, 2
    B = 4096 // n
    x = torch.randn(B, n, d)
    mask = torch.ones(B, n, dtype=torch.bool)
    net = build("vecset", d, depth, heads, mlp).train()
    fused = counted(lambda: net(VectorSet(x=x, mask=mask)).x.pow(2).mean().backward())
    _, kernels = kernels_only_step(n, d, depth, heads, mlp)
    assert fused == counted(kernels) == step_flops(B, n, d, depth, mlp) - depth * 12 * B * n * n * d
