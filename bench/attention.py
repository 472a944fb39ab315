"""Training-step throughput and peak memory: vecset's Backbone against
``torch.nn.TransformerEncoder`` (same width, heads, depth, feed-forward, pre-norm, dropout) and
the plain matrix formulation (the Backbone with every attention forced onto its reference path).

B x N is held constant (4096 vectors per batch); float32 on the CPU. Each case runs in its
own process (so its peak memory is its own): forward + backward, median of repeats.

Against the CPU's float32 matrix-multiply rate measured in the same run (a 2048^3 matmul):
each step's matrix-multiply FLOPs (``bench.common.step_flops``: forward + backward), its
achieved GFLOP/s and fraction of that rate; and ``kernels_only``, the step's matrix multiplies
and fused attention kernels alone on the same shapes (nothing else: no norms, activations,
copies, autograd), which bounds what removing the other work could give (its fraction of the
rate, and the speed over ``nn.TransformerEncoder`` the step would have at that time).

Then where the time goes (``bench/results/attention_share.json``): the attention core alone,
fused vs plain, its achieved fraction of the CPU's matrix-multiply rate, and the speedup over
the plain formulation that the step could reach if the fused core ran at that rate.

    python bench/attention.py                # full table, writes bench/results/attention.json
    python bench/attention.py --quick        # N in {128, 512}, fewer repeats
    python bench/attention.py --dropout 0.1  # both models with dropout (attention_dropout.json)
    python bench/attention.py --compile default  # also under torch.compile (attention_compile.json)
    python bench/attention.py --precisions       # fp32 / bf16-mixed / bf16-mixed + compile (attention_precision.json)

``--precisions`` (``precision_table``): vecset's Backbone and ``nn.TransformerEncoder`` side by side
in the same precision (fp32; bf16-mixed: ``torch.autocast("cpu", bfloat16)``, weights fp32; and
bf16-mixed under ``torch.compile``), at N = 128 / 512 / 2048 and d_model 128 and 256, all steps
of one (N, d) taking turns; the fp32 and bf16 matrix-multiply rates (2048^3) measured in the
same run (at each (N, d), taking turns with its steps: the same load), each step's fraction of its
own precision's rate and of the bf16 rate, and the load average at each (N, d). ``attention.json`` keeps the fp32, d 256 table above.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from bench.common import in_fresh_process, peak_rss_mb, rss_mb, step_flops, table, write_json  # noqa: E402

D, HEADS, DEPTH, MLP = 256, 4, 4, 4
TOKENS = 4096
MODELS = ("vecset", "torch_encoder", "reference")


def build(model: str, d: int = D, depth: int = DEPTH, heads: int = HEADS, mlp: int = MLP,
          dropout: float = 0.0) -> nn.Module:
    """``vecset`` (our Backbone), ``torch_encoder`` (the same size as nn.TransformerEncoder) or
    ``reference`` (our Backbone with every attention on the plain matrix path). ``dropout``
    sits in the same places in both: attention weights, MLP hidden, both residual branches."""
    from vecset.backbone import Backbone

    torch.manual_seed(0)
    if model == "torch_encoder":
        layer = nn.TransformerEncoderLayer(d, heads, mlp * d, dropout=dropout, activation="gelu",
                                           batch_first=True, norm_first=True)
        return nn.TransformerEncoder(layer, depth, norm=nn.LayerNorm(d), enable_nested_tensor=False)
    bb = Backbone(d_model=d, depth=depth, heads=heads, mlp_ratio=mlp, dropout=dropout)
    if model == "reference":
        for blk in bb.blocks:
            blk.attn.path = "reference"
    return bb


def make_step(model: str, n: int, dropout: float = 0.0, compile_mode: str | None = None, d: int = D,
              bf16: bool = False):
    """(B, step): one forward + backward of ``model`` on B x n vectors of width ``d``.
    ``compile_mode`` wraps the module in ``torch.compile`` (the first call compiles); ``bf16``
    runs the forward under ``torch.autocast("cpu", bfloat16)`` (the loss in float32)."""
    from vecset.backbone import VectorSet

    B = max(1, TOKENS // n)
    net = build(model, d=d, dropout=dropout).train()
    fwd = net if compile_mode is None else torch.compile(net, mode=None if compile_mode == "default" else compile_mode)
    g = torch.Generator().manual_seed(n)
    x = torch.randn(B, n, d, generator=g)
    mask = torch.ones(B, n, dtype=torch.bool)

    def step():
        net.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            if model == "torch_encoder":
                out = fwd(x, src_key_padding_mask=~mask)
            else:
                out = fwd(VectorSet(x=x, mask=mask)).x
        out.float().pow(2).mean().backward()

    return B, step


def kernels_only_step(n: int, d: int = D, depth: int = DEPTH, heads: int = HEADS, mlp: int = MLP,
                      dtype: torch.dtype = torch.float32):
    """(B, step): the training step's matrix multiplies and fused attention kernels alone, on
    the step's shapes and layouts: per block, each projection's forward (x W^T), input
    gradient (g W) and weight gradient (g^T x), and SDPA forward + backward. Everything else
    (norms, activations, residual adds, bias gradients, copies, autograd) is left out, so its
    time bounds the step's from below."""
    import torch.nn.functional as F

    B, T, h = max(1, TOKENS // n), max(1, TOKENS // n) * n, int(mlp * d)
    g = torch.Generator().manual_seed(n)
    shapes = [(d, 3 * d), (d, d), (d, h), (h, d)]  # (in, out): qkv, out_proj, MLP in, MLP out
    acts = {w: torch.randn(T, w, generator=g).to(dtype) for w in (d, 3 * d, h)}
    weights = [(torch.randn(o, i, generator=g) / i**0.5).to(dtype) for i, o in shapes]
    q, k, v = (torch.randn(B, heads, n, d // heads, generator=g).to(dtype).requires_grad_() for _ in range(3))
    grad_out = torch.randn(B, heads, n, d // heads, generator=g).to(dtype)

    def step():
        for _ in range(depth):
            for (i, o), w in zip(shapes, weights, strict=True):
                acts[i] @ w.t()  # forward
                acts[o] @ w  # input gradient
                acts[o].t() @ acts[i]  # weight gradient
            out = F.scaled_dot_product_attention(q, k, v)
            torch.autograd.grad(out, (q, k, v), grad_out)

    return B, step


def memory_one(model: str, n: int, dropout: float = 0.0) -> dict:
    """Peak extra resident memory of one training step, in this (fresh) process."""
    B, step = make_step(model, n, dropout)
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


def time_interleaved(n: int, repeats: int, dropout: float = 0.0, compile_mode: str | None = None) -> dict[str, dict]:
    """Every model's step at one N, taking turns; ``kernels_only`` too (with dropout, the
    kernels differ: no bound is measured)."""
    import time

    steps = {m: make_step(m, n, dropout) for m in MODELS}
    first = {}
    if compile_mode is not None:
        steps["vecset_compiled"] = make_step("vecset", n, dropout, compile_mode)
        t = time.perf_counter()
        steps["vecset_compiled"][1]()  # compiles
        first["vecset_compiled"] = {"compile_and_first_step_s": time.perf_counter() - t}
    if dropout == 0:
        steps["kernels_only"] = kernels_only_step(n)
    timing = interleaved({m: step for m, (_, step) in steps.items()}, repeats)
    return {m: {"B": steps[m][0], **t, "vectors_per_s": steps[m][0] * n / t["median_s"], **first.get(m, {})}
            for m, t in timing.items()}


def matmul_gflops(repeats: int, dtype: torch.dtype = torch.float32) -> float:
    """This CPU's matrix-multiply rate in ``dtype`` (2048 x 2048 @ 2048 x 2048), GFLOP/s."""
    a, b = torch.randn(2048, 2048).to(dtype), torch.randn(2048, 2048).to(dtype)
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


PRECISIONS = {"fp32": (False, None), "bf16-mixed": (True, None), "bf16-mixed+compile": (True, "default")}


def precision_table(ns: list[int], ds: list[int], repeats: int, precisions: list[str],
                    compile_ns: list[int] | None = None) -> dict:
    """The ``--precisions`` table: at each (N, d) every model x precision step (and the
    ``kernels_only`` bound in fp32 and bf16) taking turns, compiled ones compiled first (only at
    the N in ``compile_ns`` when given: each compiles for a minute or more on a busy 2-core CPU)."""
    import os
    import time

    rates = {"fp32": matmul_gflops(repeats), "bf16": matmul_gflops(repeats, torch.bfloat16)}
    print(f"matrix-multiply rate (2048^3): fp32 {rates['fp32']:.0f}, bf16 {rates['bf16']:.0f} GFLOP/s "
          f"(load {os.getloadavg()[0]:.2f})", flush=True)
    rows = []
    for d in ds:
        for n in ns:
            steps, first = {}, {}
            for prec in precisions:
                bf16, mode = PRECISIONS[prec]
                if mode is not None and compile_ns is not None and n not in compile_ns:
                    continue
                for model in ("vecset", "torch_encoder"):
                    steps[(model, prec)] = make_step(model, n, compile_mode=mode, d=d, bf16=bf16)
                    if mode is not None:
                        t = time.perf_counter()
                        steps[(model, prec)][1]()  # compiles
                        first[(model, prec)] = time.perf_counter() - t
            for prec, dtype in (("fp32", torch.float32), ("bf16-mixed", torch.bfloat16)):
                if prec in precisions:
                    steps[("kernels_only", prec)] = kernels_only_step(n, d, dtype=dtype)
            # the matrix-multiply rates take turns with the steps too: the same load for both
            a32, b32 = torch.randn(2048, 2048), torch.randn(2048, 2048)
            a16, b16 = a32.bfloat16(), b32.bfloat16()
            fns = {key: step for key, (_, step) in steps.items()}
            fns.update({"mm_fp32": lambda a=a32, b=b32: a @ b, "mm_bf16": lambda a=a16, b=b16: a @ b})
            load = os.getloadavg()
            timing = interleaved(fns, repeats)
            rates = {p: 2 * 2048**3 / timing.pop(f"mm_{p}")["median_s"] / 1e9 for p in ("fp32", "bf16")}
            print(f"  d={d} N={n}: matrix-multiply rate fp32 {rates['fp32']:.0f}, bf16 {rates['bf16']:.0f} GFLOP/s",
                  flush=True)
            flop = step_flops(TOKENS // n, n, d, DEPTH, MLP)
            by = {}
            for (model, prec), t in timing.items():
                own = rates["bf16" if prec.startswith("bf16") else "fp32"]
                gf = flop / t["median_s"] / 1e9
                row = {"model": model, "precision": prec, "d_model": d, "N": n, "B": steps[(model, prec)][0], **t,
                       "vectors_per_s": steps[(model, prec)][0] * n / t["median_s"], "step_gflop": flop / 1e9,
                       "gflops": gf, "fraction_of_own_matmul_rate": gf / own,
                       "fraction_of_bf16_matmul_rate": gf / rates["bf16"], "matmul_gflops_fp32": rates["fp32"],
                       "matmul_gflops_bf16": rates["bf16"], "load_1min": load[0]}
                if (model, prec) in first:
                    row["compile_and_first_step_s"] = first[(model, prec)]
                by[(model, prec)] = row
                rows.append(row)
            for (model, prec), row in by.items():
                if ("torch_encoder", prec) in by and model != "torch_encoder":
                    row["speed_vs_torch_encoder"] = by[("torch_encoder", prec)]["median_s"] / row["median_s"]
                if ("vecset", "fp32") in by:
                    row["speed_vs_vecset_fp32"] = by[("vecset", "fp32")]["median_s"] / row["median_s"]
                if model == "torch_encoder" and ("torch_encoder", "fp32") in by:
                    row["speed_vs_torch_encoder_fp32"] = by[("torch_encoder", "fp32")]["median_s"] / row["median_s"]
            for (model, prec), row in by.items():
                print(f"  d={d} N={n:5d} {model:14s} {prec:19s} {row['median_s']:.3f} s/step "
                      f"(load {load[0]:.2f})", flush=True)
    return {"matmul_gflops_fp32": rates["fp32"], "matmul_gflops_bf16": rates["bf16"], "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", nargs=3, metavar=("MODEL", "N", "DROPOUT"), help="memory of one case (internal)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dropout", type=float, default=0.0, help="in both models (writes attention_dropout.json)")
    ap.add_argument("--compile", dest="compile_mode", default=None, metavar="MODE",
                    help="also time the Backbone under torch.compile(mode=MODE): default, max-autotune-no-cudagraphs")
    ap.add_argument("--ns", type=int, nargs="+", default=None, help="sequence lengths (default 128 512 2048)")
    ap.add_argument("--precisions", nargs="*", default=None, metavar="PRECISION",
                    help=f"the precision table (attention_precision.json); names from {list(PRECISIONS)}, all when none")
    ap.add_argument("--out", default=None, help="JSON name of the precision table (default attention_precision)")
    ap.add_argument("--compile-ns", type=int, nargs="+", default=None,
                    help="N values at which the precision table's compiled rows run (default: every N)")
    ap.add_argument("--ds", type=int, nargs="+", default=[128, 256], help="d_model values of the precision table")
    args = ap.parse_args()
    if args.precisions is not None:
        import os

        precs = args.precisions or list(PRECISIONS)
        ns = args.ns or [128, 512, 2048]
        load = os.getloadavg()
        res = precision_table(ns, args.ds, args.repeats, precs, args.compile_ns)
        cols = ["model", "precision", "d_model", "N", "B", "median_s", "min_s", "max_s", "repeats", "gflops",
                "fraction_of_own_matmul_rate", "fraction_of_bf16_matmul_rate", "speed_vs_torch_encoder",
                "speed_vs_vecset_fp32", "speed_vs_torch_encoder_fp32", "compile_and_first_step_s", "load_1min"]
        print(f"\ntraining step, {HEADS} heads, depth {DEPTH}, B x N = {TOKENS}; matrix-multiply rate fp32 "
              f"{res['matmul_gflops_fp32']:.0f}, bf16 {res['matmul_gflops_bf16']:.0f} GFLOP/s")
        print(table(res["rows"], cols))
        path = write_json(args.out or "attention_precision", {
            "heads": HEADS, "depth": DEPTH, "mlp_ratio": MLP, "tokens_per_batch": TOKENS, "threads": torch.get_num_threads(),
            "load_before": load, "load_after": os.getloadavg(), **res})
        print(f"wrote {path}")
        return
    if args.one:
        print(json.dumps(memory_one(args.one[0], int(args.one[1]), float(args.one[2]))))
        return
    ns = args.ns or ([128, 512] if args.quick else [128, 512, 2048])
    repeats = 2 if args.quick else args.repeats
    rows, shares = [], []
    gflops = matmul_gflops(repeats)
    print(f"float32 matrix-multiply rate (2048^3): {gflops:.0f} GFLOP/s", flush=True)
    for n in ns:
        timing = time_interleaved(n, repeats, args.dropout, args.compile_mode)
        if args.dropout == 0:
            shares.append(attention_share(n, repeats, timing, gflops))
        flop = step_flops(TOKENS // n, n, D, DEPTH, MLP)
        for model, t in timing.items():
            mem = in_fresh_process(__file__, [model, str(n), str(args.dropout)]) if model in MODELS else {}
            rows.append({"model": model, "N": n, **t, **mem, "step_gflop": flop / 1e9,
                         "gflops": flop / t["median_s"] / 1e9, "fraction_of_matmul_rate": flop / t["median_s"] / 1e9 / gflops})
            print(f"  {model:16s} N={n:5d} {t['median_s']:.3f} s/step", flush=True)
    # ratios against the references measured in the same run
    for n in ns:
        by = {r["model"]: r for r in rows if r["N"] == n and "median_s" in r}
        for name in ("vecset", "vecset_compiled", "kernels_only"):
            if name not in by:
                continue
            v = by[name]
            for ref in ("torch_encoder", "reference"):
                if ref in by:
                    v[f"speed_vs_{ref}"] = by[ref]["median_s"] / v["median_s"]
                    if "peak_extra_mb" in v:
                        v[f"mem_vs_{ref}"] = v["peak_extra_mb"] / max(by[ref]["peak_extra_mb"], 1e-9)
    cols = ["model", "N", "B", "median_s", "min_s", "max_s", "vectors_per_s", "peak_extra_mb", "step_gflop", "gflops",
            "fraction_of_matmul_rate", "speed_vs_torch_encoder", "speed_vs_reference", "mem_vs_reference"]
    if args.compile_mode:
        cols.append("compile_and_first_step_s")
    print(f"\ntraining step, d {D}, {HEADS} heads, depth {DEPTH}, B x N = {TOKENS}, dropout {args.dropout}; "
          f"matrix-multiply rate {gflops:.0f} GFLOP/s")
    print(table(rows, cols))
    # the plain run's table is the one BENCHMARKS.md and docs quote: the variants keep their own
    name = "attention" + ("_dropout" if args.dropout else "") + ("_compile" if args.compile_mode else "")
    path = write_json(name, {"d_model": D, "heads": HEADS, "depth": DEPTH, "mlp_ratio": MLP, "dropout": args.dropout,
                             "compile_mode": args.compile_mode, "tokens_per_batch": TOKENS, "matmul_gflops": gflops,
                             "rows": rows})
    print(f"wrote {path}")
    if not shares or args.compile_mode:
        return
    print(f"\nattention core alone, x {DEPTH} layers (matrix-multiply rate {gflops:.0f} GFLOP/s)")
    print(table(shares, list(shares[0])))
    path = write_json("attention_share", {"matmul_gflops": gflops, "depth": DEPTH, "rows": shares})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
