"""The Backbone on a CUDA GPU in bf16 autocast: vectors per second at N in {512, 2048, 8192},
torch.compile on and off, and the achieved fraction of the GPU's bf16 matrix-multiply rate
measured in the same script (a large bf16 matmul). Runs in well under 5 minutes.

    python bench/gpu.py          # needs a CUDA GPU; writes bench/results/gpu.json
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench.common import table, write_json  # noqa: E402

D, HEADS, DEPTH, MLP = 1024, 16, 8, 4
TOKENS = 65536


def cuda_time(fn, repeats: int = 10, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    return sorted(times)[len(times) // 2]


def matmul_rate() -> float:
    """Measured bf16 dense matmul FLOP/s (8192^3)."""
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    return 2 * n**3 / cuda_time(lambda: a @ b, repeats=20)


def step_flops(B: int, N: int) -> float:
    """Forward + backward matmul FLOPs of one training step (3x forward)."""
    dense = 2 * B * N * (4 * D * D + 2 * MLP * D * D)  # qkv + out, and the MLP
    attn = 2 * 2 * B * N * N * D  # QK^T and AV
    return 3 * DEPTH * (dense + attn)


def main() -> None:
    if not torch.cuda.is_available():
        print("bench/gpu.py needs a CUDA GPU; none is visible here")
        sys.exit(1)
    from backbone import Backbone, VectorSet

    peak = matmul_rate()
    print(f"measured bf16 matmul rate: {peak / 1e12:.0f} TFLOP/s on {torch.cuda.get_device_name(0)}")
    rows = []
    for compiled in (False, True):
        for n in (512, 2048, 8192):
            torch.manual_seed(0)
            B = TOKENS // n
            bb = Backbone(d_model=D, depth=DEPTH, heads=HEADS, mlp_ratio=MLP).cuda().train()
            fwd = torch.compile(bb) if compiled else bb
            x = torch.randn(B, n, D, device="cuda")
            vs = VectorSet(x=x, mask=torch.ones(B, n, dtype=torch.bool, device="cuda"))

            def step(bb=bb, fwd=fwd, vs=vs):
                bb.zero_grad(set_to_none=True)
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    out = fwd(vs).x
                out.float().pow(2).mean().backward()

            t0 = time.perf_counter()
            step()  # includes compilation when compiled
            first = time.perf_counter() - t0
            secs = cuda_time(step)
            rows.append({"compile": compiled, "N": n, "B": B, "step_s": secs, "first_step_s": first,
                         "vectors_per_s": B * n / secs, "fraction_of_matmul_rate": step_flops(B, n) / secs / peak,
                         "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30})
            torch.cuda.reset_peak_memory_stats()
            print(rows[-1], flush=True)
    print(table(rows, ["compile", "N", "B", "step_s", "first_step_s", "vectors_per_s", "fraction_of_matmul_rate", "peak_mem_gib"]))
    path = write_json("gpu", {"matmul_tflops": peak / 1e12, "d_model": D, "heads": HEADS, "depth": DEPTH, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
