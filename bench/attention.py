"""Training-step throughput and peak memory: vecset's Backbone against
``torch.nn.TransformerEncoder`` (same width, heads, depth, feed-forward, pre-norm) and the
plain matrix formulation (the Backbone with every attention forced onto its reference path).

B x N is held constant (4096 vectors per batch); float32 on the CPU. Each case runs in its
own process (so its peak memory is its own): forward + backward, median of repeats.

Then where the time goes (``bench/results/attention_share.json``): the attention core alone,
fused vs plain, its achieved fraction of the CPU's matrix-multiply rate, and the speedup over
the plain formulation that the step could reach if the fused core ran at that rate.

    python bench/attention.py            # full table, writes bench/results/attention.json
    python bench/attention.py --quick    # N in {128, 512}, fewer repeats
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from bench.common import in_fresh_process, peak_rss_mb, rss_mb, table, write_json  # noqa: E402

D, HEADS, DEPTH, MLP = 256, 4, 4, 4
TOKENS = 4096
MODELS = ("vecset", "torch_encoder", "reference")


def build(model: str, d: int = D, depth: int = DEPTH, heads: int = HEADS, mlp: int = MLP) -> nn.Module:
    """``vecset`` (our Backbone), ``torch_encoder`` (the same size as nn.TransformerEncoder) or
    ``reference`` (our Backbone with every attention on the plain matrix path)."""
    from vecset.backbone import Backbone

    torch.manual_seed(0)
    if model == "torch_encoder":
        layer = nn.TransformerEncoderLayer(d, heads, mlp * d, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        return nn.TransformerEncoder(layer, depth, norm=nn.LayerNorm(d), enable_nested_tensor=False)
    bb = Backbone(d_model=d, depth=depth, heads=heads, mlp_ratio=mlp)
    if model == "reference":
        for blk in bb.blocks:
            blk.attn.path = "reference"
    return bb


def make_step(model: str, n: int):
    from vecset.backbone import VectorSet

    B = max(1, TOKENS // n)
    net = build(model).train()
    g = torch.Generator().manual_seed(n)
    x = torch.randn(B, n, D, generator=g)
    mask = torch.ones(B, n, dtype=torch.bool)

    def step():
        net.zero_grad(set_to_none=True)
        if model == "torch_encoder":
            out = net(x, src_key_padding_mask=~mask)
        else:
            out = net(VectorSet(x=x, mask=mask)).x
        out.pow(2).mean().backward()

    return B, step


def memory_one(model: str, n: int) -> dict:
    """Peak extra resident memory of one training step, in this (fresh) process."""
    B, step = make_step(model, n)
    base = rss_mb()
    step()
    return {"model": model, "N": n, "peak_extra_mb": peak_rss_mb() - base}


def interleaved(fns: dict, repeats: int) -> dict[str, dict]:
    """Median, min and max seconds of each function; they take turns call by call, so load
    from other processes hits all alike."""
    import statistics
    import time

    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()  # warmup
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: {"median_s": statistics.median(ts), "min_s": min(ts), "max_s": max(ts), "repeats": repeats}
            for name, ts in times.items()}


def time_interleaved(n: int, repeats: int) -> dict[str, dict]:
    steps = {m: make_step(m, n) for m in MODELS}
    timing = interleaved({m: step for m, (_, step) in steps.items()}, repeats)
    return {m: {"B": steps[m][0], **t, "vectors_per_s": steps[m][0] * n / t["median_s"]} for m, t in timing.items()}


def matmul_gflops(repeats: int) -> float:
    """This CPU's float32 matrix-multiply rate (2048 x 2048 @ 2048 x 2048), GFLOP/s."""
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    return 2 * 2048**3 / interleaved({"mm": lambda: a @ b}, repeats)["mm"]["median_s"] / 1e9


def attention_share(n: int, repeats: int, step: dict[str, dict], gflops: float) -> dict:
    """Where the step's time goes at one N: the attention core alone (Q, K, V -> output, forward
    + backward), fused vs plain, times the depth; the rest of the step (projections, MLP,
    norms) is the same code in both. The bound: the speedup over the plain formulation if
    the fused core ran at the CPU's matrix-multiply rate (12 B H N^2 Dh flops per layer)."""
    from vecset.backbone import MultiHeadSelfAttention

    B, dh = max(1, TOKENS // n), D // HEADS
    attn = MultiHeadSelfAttention(D, HEADS)
    g = torch.Generator().manual_seed(n)
    q, k, v = (torch.randn(B, HEADS, n, dh, generator=g).requires_grad_() for _ in range(3))
    mask = torch.ones(B, n, dtype=torch.bool)
    t = interleaved({"fused": lambda: attn._fast(q, k, v, mask, None, None).sum().backward(),
                     "plain": lambda: attn.reference(q, k, v, mask, None, None)[0].sum().backward()}, repeats)
    fused, plain = DEPTH * t["fused"]["median_s"], DEPTH * t["plain"]["median_s"]
    flops = DEPTH * 12 * B * HEADS * n * n * dh
    shared = step["vecset"]["median_s"] - fused
    return {"N": n, "B": B, "step_s": step["vecset"]["median_s"], "step_reference_s": step["reference"]["median_s"],
            "core_fused_s": fused, "core_plain_s": plain, "core_speedup": plain / fused,
            "rest_of_step_s": shared, "core_fused_gflops": flops / fused / 1e9,
            "core_fraction_of_matmul_rate": flops / fused / 1e9 / gflops,
            "bound_speed_vs_reference": step["reference"]["median_s"] / (shared + flops / gflops / 1e9)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", nargs=2, metavar=("MODEL", "N"), help="memory of one case (internal)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(memory_one(args.one[0], int(args.one[1]))))
        return
    ns = [128, 512] if args.quick else [128, 512, 2048]
    repeats = 2 if args.quick else args.repeats
    rows, shares = [], []
    gflops = matmul_gflops(repeats)
    for n in ns:
        timing = time_interleaved(n, repeats)
        shares.append(attention_share(n, repeats, timing, gflops))
        for model in MODELS:
            mem = in_fresh_process(__file__, [model, str(n)])
            rows.append({"model": model, "N": n, **timing[model], **mem})
            print(f"  {model:14s} N={n:5d} {timing[model]['median_s']:.3f} s/step", flush=True)
    # ratios against the references measured in the same run
    for n in ns:
        by = {r["model"]: r for r in rows if r["N"] == n and "median_s" in r}
        if "vecset" not in by:
            continue
        v = by["vecset"]
        for ref in ("torch_encoder", "reference"):
            if ref in by:
                v[f"speed_vs_{ref}"] = by[ref]["median_s"] / v["median_s"]
                v[f"mem_vs_{ref}"] = v["peak_extra_mb"] / max(by[ref]["peak_extra_mb"], 1e-9)
    cols = ["model", "N", "B", "median_s", "min_s", "max_s", "vectors_per_s", "peak_extra_mb",
            "speed_vs_torch_encoder", "speed_vs_reference", "mem_vs_reference"]
    print(table(rows, cols))
    path = write_json("attention", {"d_model": D, "heads": HEADS, "depth": DEPTH, "mlp_ratio": MLP,
                                    "tokens_per_batch": TOKENS, "rows": rows})
    print(f"wrote {path}")
    print(f"\nattention core alone, x {DEPTH} layers (matrix-multiply rate {gflops:.0f} GFLOP/s)")
    print(table(shares, list(shares[0])))
    path = write_json("attention_share", {"matmul_gflops": gflops, "depth": DEPTH, "rows": shares})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
