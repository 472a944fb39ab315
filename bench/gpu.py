"""The Backbone on a CUDA GPU in bf16 autocast: training-step vectors per second at N in
{512, 2048, 8192} (B x N = 65,536), ``torch.compile`` on and off, and the achieved fraction of
the GPU's bf16 matrix-multiply rate measured in the same script (an 8192^3 bf16 matmul).
In the same run, eager: ``torch.nn.TransformerEncoder`` of the same size and the plain matrix
formulation (our Backbone with every attention on its reference path), as ratios. Then
truncated attention (window 64, the long-speech bench's model) at N = 7,500 and 60,000 frames,
inference: time per frame and peak memory. Runs in about 3 minutes on an H200.

    python bench/gpu.py          # needs a CUDA GPU; writes bench/results/gpu.json
    python bench/gpu.py --dry    # tiny sizes on whatever device is there: checks the script
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench.attention import build  # noqa: E402
from bench.common import step_flops, table, write_json  # noqa: E402

D, HEADS, DEPTH, MLP = 1024, 16, 8, 4
TOKENS = 65536
NS = (512, 2048, 8192)
LONG = dict(d_model=192, heads=4, depth=4, window=64, ns=(7500, 60000))  # as bench/long_speech.py


class Clock:
    """Device-side timing: CUDA events on a GPU, perf_counter (after a sync) elsewhere."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def time(self, fn, repeats: int = 10, warmup: int = 3) -> dict:
        for _ in range(warmup):
            fn()
        self.sync()
        times = []
        for _ in range(repeats):
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end) / 1000)
            else:
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
        return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


def matmul_rate(device: torch.device, clock: Clock, n: int) -> float:
    """Measured dense matmul FLOP/s (n^3, bf16 on a GPU, float32 elsewhere), on random data."""
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    return 2 * n**3 / clock.time(lambda: a @ b, repeats=20)["median_s"]


def train_case(model: str, compiled: bool, n: int, tokens: int, d: int, depth: int, heads: int,
               device: torch.device, clock: Clock, peak: float, repeats: int) -> dict:
    from vecset.backbone import VectorSet

    B = max(1, tokens // n)
    row = {"model": model, "compile": compiled, "N": n, "B": B}
    if device.type == "cuda":
        torch._dynamo.reset()  # a static compile per shape
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    net = build("reference" if model == "plain" else model, d, depth, heads, MLP).to(device).train()
    fwd = torch.compile(net) if compiled else net
    g = torch.Generator(device=device).manual_seed(n)
    x = torch.randn(B, n, d, device=device, generator=g)
    mask = torch.ones(B, n, dtype=torch.bool, device=device)
    vs = VectorSet(x=x, mask=mask)

    def step():
        net.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            out = fwd(x, src_key_padding_mask=~mask) if model == "torch_encoder" else fwd(vs).x
        out.float().pow(2).mean().backward()

    try:
        t0 = time.perf_counter()
        step()  # the first step includes compilation when compiled
        clock.sync()
        row["first_step_s"] = time.perf_counter() - t0
        t = clock.time(step, repeats=repeats)
    except (torch.OutOfMemoryError, MemoryError) as e:  # MemoryError: our check, before allocating
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        return row
    row.update(step_s=t["median_s"], spread_s=[t["min_s"], t["max_s"]], vectors_per_s=B * n / t["median_s"],
               fraction_of_matmul_rate=step_flops(B, n, d, depth, MLP) / t["median_s"] / peak)
    if device.type == "cuda":
        row["peak_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
    return row


def long_case(n: int, device: torch.device, clock: Clock, repeats: int) -> dict:
    from vecset.backbone import Backbone, VectorSet

    torch.manual_seed(0)
    bb = Backbone(d_model=LONG["d_model"], depth=LONG["depth"], heads=LONG["heads"], window=LONG["window"])
    bb = bb.to(device).eval()
    x = torch.randn(1, n, LONG["d_model"], device=device)
    vs = VectorSet(x=x, mask=torch.ones(1, n, dtype=torch.bool, device=device))
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated() if device.type == "cuda" else 0

    def infer():
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16):
            bb(vs)

    t = clock.time(infer, repeats=repeats, warmup=1)
    row = {"N": n, "window": LONG["window"], "seconds": t["median_s"], "us_per_frame": t["median_s"] / n * 1e6}
    if device.type == "cuda":
        row["peak_extra_mib"] = (torch.cuda.max_memory_allocated() - base) / 2**20
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dry", action="store_true", help="tiny sizes on any device: checks the script runs")
    p.add_argument("--repeats", type=int, default=10)
    args = p.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type != "cuda" and not args.dry:
        print("bench/gpu.py needs a CUDA GPU; none is visible here (--dry checks the script on the CPU)")
        sys.exit(1)
    clock = Clock(device)
    d, depth, heads, tokens, ns = (D, DEPTH, HEADS, TOKENS, NS) if not args.dry else (32, 2, 4, 256, (16, 64))
    long_ns = LONG["ns"] if not args.dry else (300, 600)
    repeats = args.repeats if not args.dry else 2

    peak = matmul_rate(device, clock, 8192 if not args.dry else 256)
    name = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"
    print(f"measured {'bf16' if device.type == 'cuda' else 'float32'} matmul rate: {peak / 1e12:.1f} TFLOP/s on {name}")
    rows = []
    for n in ns:
        for model, compiled in (("vecset", False), ("vecset", True), ("torch_encoder", False), ("plain", False)):
            if compiled and args.dry:
                continue  # inductor's CPU compile takes minutes here; the GPU run covers it
            rows.append(train_case(model, compiled, n, tokens, d, depth, heads, device, clock, peak, repeats))
            print(rows[-1], flush=True)
    for r in rows:
        ref = {x["model"]: x for x in rows if x["N"] == r["N"] and not x["compile"]}
        if "step_s" in r and "step_s" in ref.get("vecset", {}):
            r["speed_vs_vecset_eager"] = ref["vecset"]["step_s"] / r["step_s"]
    long_rows = [long_case(n, device, clock, repeats) for n in long_ns]
    for r in long_rows:
        r["per_frame_vs_shortest"] = r["us_per_frame"] / long_rows[0]["us_per_frame"]
        print(r, flush=True)

    cols = ["model", "compile", "N", "B", "step_s", "vectors_per_s", "fraction_of_matmul_rate",
            "speed_vs_vecset_eager", "first_step_s", "peak_mem_gib", "error"]
    print(f"\ntraining step, bf16 autocast, d {d}, {heads} heads, depth {depth}, B x N = {tokens}; "
          f"matmul rate {peak / 1e12:.1f} TFLOP/s")
    print(table(rows, cols))
    print(f"\ntruncated attention (window {LONG['window']}), inference, d {LONG['d_model']}, depth {LONG['depth']}")
    print(table(long_rows, ["N", "seconds", "us_per_frame", "per_frame_vs_shortest", "peak_extra_mib"]))
    if args.dry:
        return
    path = write_json("gpu", {"device": name, "matmul_tflops": peak / 1e12, "d_model": d, "heads": heads,
                              "depth": depth, "mlp_ratio": MLP, "tokens_per_batch": tokens, "rows": rows,
                              "long": long_rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
