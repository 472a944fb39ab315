"""Where a bf16-mixed training step of the Backbone spends its time, by torch.profiler.

The step: Backbone (depth 4, 4 heads, MLP 4x), B 8 sets of N 512 vectors, forward under
``torch.autocast("cpu", dtype=torch.bfloat16)``, a float32 loss, backward, AdamW. Each op's
self CPU time goes to one class: matmuls (mm, addmm, bmm, linear), convolutions (forward and
backward, for the image stems and the CNN of ``--config``), attention (the SDPA
kernels and their backward), casts (dtype conversions: ``_to_copy`` / ``copy_``), the
optimizer (AdamW's foreach ops), elementwise and reductions (the rest: norms, GELU,
residual adds, the loss). The fp32 step is profiled the same way, for comparison.

    python bench/bf16_profile.py              # d_model 128 and 256, writes bench/results/bf16_profile.json
    python bench/bf16_profile.py --steps 3    # fewer profiled steps
    python bench/bf16_profile.py --ab         # each bf16 change on and off, steps taking turns (bf16_profile_ab.json)
    python bench/bf16_profile.py --config configs/freesolv.yaml configs/g2p.yaml   # a job's own step (bf16_profile_jobs.json)

``--ab``: the Backbone training step (B x N = 4096, AdamW) at N 128 / 512 and d 128 / 256 in fp32,
in bf16-mixed with every change of the bf16 path undone (``before``) and as it is (``after``),
taking turns step by step; the ratios are from that one run.

``--config``: the training step of a job as its config builds it (encoder, backbone, head, loss;
its data module's first ``--batches`` training batches, cycled), AdamW, in fp32 and in
bf16-mixed: the two steps taking turns for the ratio, then each profiled by class as above.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench.common import table, write_json  # noqa: E402

B, N, DEPTH, HEADS, MLP = 8, 512, 4, 4, 4
CLASSES = ("matmul", "convolution", "attention", "casts", "optimizer", "elementwise")


def op_class(name: str) -> str:
    """The class of one aten op (by its profiler name)."""
    n = name.removeprefix("aten::")
    if "scaled_dot_product" in n or "flash_attention" in n or "_efficient_attention" in n:
        return "attention"
    if n in ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "addmv", "mv", "dot"):
        return "matmul"
    if "convolution" in n or n.startswith(("conv", "mkldnn_conv", "cudnn_conv")):
        return "convolution"
    if n in ("_to_copy", "copy_", "to", "_copy_from", "_copy_from_and_resize"):
        return "casts"
    if n.startswith("_foreach") or "adamw" in n or n.startswith("_fused_adam"):
        return "optimizer"
    return "elementwise"


def make_step(d: int, bf16: bool, b: int = B, n: int = N, setting=None):
    """One training step; ``setting`` (a context manager factory) wraps it, e.g. to undo a change."""
    from contextlib import nullcontext

    from vecset.backbone import Backbone, VectorSet

    torch.manual_seed(0)
    net = Backbone(d_model=d, depth=DEPTH, heads=HEADS, mlp_ratio=MLP).train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)
    x = torch.randn(b, n, d)
    mask = torch.ones(b, n, dtype=torch.bool)
    setting = setting or nullcontext

    def step():
        with setting():
            _step()

    def _step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out = net(VectorSet(x=x, mask=mask)).x
        out.float().pow(2).mean().backward()
        opt.step()

    return step


def job_step(config: str, bf16: bool, batches: int):
    """One training step of the job ``config`` builds (module docstring, ``--config``)."""
    import itertools

    from vecset.pipelines.cli import VecsetCLI

    cli = VecsetCLI(run=False, args=["--config", config, "--trainer.logger", "false",
                                     "--trainer.precision", "32-true"])
    model, dm = cli.model, cli.datamodule
    dm.prepare_data()
    dm.setup("fit")
    if hasattr(model, "encoder") and hasattr(model, "head"):  # a TaskModule: what its setup does in a fit
        from vecset.pipelines.training.hand_over import hand_over

        hand_over(dm, "fit", model.encoder, model.head)  # vocabulary, scalers, statistics
    data = list(itertools.islice(iter(dm.train_dataloader()), batches))
    model.train()
    torch.manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    cycle = itertools.cycle(data)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out = model.training_step(next(cycle), 0)
        (out["loss"] if isinstance(out, dict) else out).float().backward()
        opt.step()

    return step, len(data)


def jobs(configs: list[str], repeats: int, steps: int, batches: int) -> list[dict]:
    from bench.attention import interleaved

    rows = []
    for config in configs:
        made = {prec: job_step(config, prec == "bf16-mixed", batches) for prec in ("fp32", "bf16-mixed")}
        load = os.getloadavg()[0]
        t = interleaved({prec: step for prec, (step, _) in made.items()}, repeats)
        for prec, (step, n) in made.items():
            row = {"config": config, "batches": n, **profile_step(step, steps), "precision": prec,
                   "median_s": t[prec]["median_s"], "min_s": t[prec]["min_s"], "max_s": t[prec]["max_s"],
                   "repeats": repeats, "speed_vs_fp32": t["fp32"]["median_s"] / t[prec]["median_s"],
                   "load_1min": load}
            row.pop("step_s")
            print({k: v for k, v in row.items() if k != "top_ops"}, flush=True)
            rows.append(row)
    return rows


def profile(d: int, bf16: bool, steps: int) -> dict:
    return {"d_model": d, "precision": "bf16-mixed" if bf16 else "fp32", **profile_step(make_step(d, bf16), steps)}


def profile_step(step, steps: int) -> dict:
    """Self CPU time per class over ``steps`` profiled steps (after one warm-up), the op calls
    per class and step, and the top ops."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as tprofile

    step()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    plain_s = (time.perf_counter() - t) / steps  # without the profiler's overhead
    with tprofile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    per = {c: 0.0 for c in CLASSES}
    calls = {c: 0 for c in CLASSES}  # op calls per step: what ran, whatever this CPU's speed
    ops = []
    for ev in prof.key_averages():
        if not ev.key.startswith("aten::"):
            continue
        us = ev.self_cpu_time_total / steps
        per[op_class(ev.key)] += us
        calls[op_class(ev.key)] += ev.count // steps
        ops.append({"op": ev.key, "class": op_class(ev.key), "self_ms": us / 1e3, "calls": ev.count // steps})
    total = sum(per.values())
    ops.sort(key=lambda o: -o["self_ms"])
    return {"step_s": plain_s, "profiled_self_ms": total / 1e3, **{f"share_{c}": per[c] / total for c in CLASSES},
            **{f"calls_{c}": calls[c] for c in CLASSES}, "top_ops": ops[:15]}


def _before():
    """The bf16 path with its changes undone: SDPA stays in bf16 at every N."""
    from contextlib import contextmanager

    from vecset.backbone.attention import paths

    @contextmanager
    def ctx():
        old, paths.FP32_SDPA_MAX_N = paths.FP32_SDPA_MAX_N, 0
        try:
            yield
        finally:
            paths.FP32_SDPA_MAX_N = old

    return ctx


def ab(repeats: int, ns: list[int], ds: list[int]) -> list[dict]:
    from bench.attention import interleaved

    rows = []
    for d in ds:
        for n in ns:
            b = max(1, 4096 // n)
            steps = {"fp32": make_step(d, False, b, n), "bf16_before": make_step(d, True, b, n, _before()),
                     "bf16_after": make_step(d, True, b, n)}
            load = os.getloadavg()[0]
            t = interleaved(steps, repeats)
            row = {"d_model": d, "N": n, "B": b, **{f"{k}_s": v["median_s"] for k, v in t.items()},
                   "repeats": repeats, "after_vs_before": t["bf16_before"]["median_s"] / t["bf16_after"]["median_s"],
                   "after_vs_fp32": t["fp32"]["median_s"] / t["bf16_after"]["median_s"],
                   "before_vs_fp32": t["fp32"]["median_s"] / t["bf16_before"]["median_s"], "load_1min": load}
            print(row, flush=True)
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--d", type=int, nargs="+", default=[128, 256])
    ap.add_argument("--out", default="bf16_profile")
    ap.add_argument("--ab", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ns", type=int, nargs="+", default=[128, 512])
    ap.add_argument("--config", nargs="+", default=None, help="profile these jobs' own steps (bf16_profile_jobs.json)")
    ap.add_argument("--batches", type=int, default=8, help="--config: training batches cycled through")
    args = ap.parse_args()
    if args.config:
        load = os.getloadavg()
        rows = jobs(args.config, args.repeats, args.steps, args.batches)
        print(table(rows, ["config", "precision", "median_s", "speed_vs_fp32", "profiled_self_ms",
                           *(f"share_{c}" for c in CLASSES), "load_1min"]))
        path = write_json(args.out if args.out != "bf16_profile" else "bf16_profile_jobs",
                          {"threads": torch.get_num_threads(), "load_before": load, "load_after": os.getloadavg(),
                           "rows": rows})
        print(f"wrote {path}")
        return
    if args.ab:
        load = os.getloadavg()
        rows = ab(args.repeats, args.ns, args.d)
        print(table(rows, list(rows[0])))
        path = write_json(args.out if args.out != "bf16_profile" else "bf16_profile_ab",
                          {"depth": DEPTH, "heads": HEADS, "mlp_ratio": MLP, "threads": torch.get_num_threads(),
                           "changes": {"sdpa_fp32": "SDPA in fp32 (casts in and out) for N <= 512 on a CPU without AMX"},
                           "load_before": load, "load_after": os.getloadavg(), "rows": rows})
        print(f"wrote {path}")
        return
    rows = [profile(d, bf16, args.steps) for d in args.d for bf16 in (False, True)]
    cols = ["d_model", "precision", "step_s", "profiled_self_ms", *(f"share_{c}" for c in CLASSES)]
    print(f"Backbone training step, B {B}, N {N}, depth {DEPTH}, {HEADS} heads, AdamW; threads {torch.get_num_threads()}")
    print(table(rows, cols))
    for r in rows:
        print(f"\n{r['precision']} d {r['d_model']}: top ops")
        print(table(r["top_ops"][:10], ["op", "class", "self_ms", "calls"]))
    path = write_json(args.out, {"B": B, "N": N, "depth": DEPTH, "heads": HEADS, "mlp_ratio": MLP,
                                 "threads": torch.get_num_threads(), "load_before": os.getloadavg(),
                                 "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
