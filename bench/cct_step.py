"""The training step of configs/fashion_mnist.yaml's compact convolutional transformer (CCT) on
one CPU thread (issue 61, "The step"): where its time goes (torch.profiler, by operator family)
and images/s of the step for the cheap changes to the tokenizer:

- ``base``: the config's ConvTokenizer (3 x [3x3 conv, ReLU, 3x3 max-pool stride 2], 32 hidden
  channels, the last 128), Backbone d 128 x 4, SequenceHead with attention pooling;
- ``strided``: each [conv, ReLU, max-pool] block as [3x3 conv of stride 2, ReLU] (the same
  28 -> 14 -> 7 -> 4 grid, a quarter of the convolution's positions, no pooling);
- ``hidden16``: 16 hidden channels instead of 32;
- ``channels_last``: the model and images in channels-last memory format (``channels_last_input``:
  the images only, what one line in the tokenizer's forward would do); the same arithmetic, so
  the first step's loss is compared with the base's (``loss_vs_base``);
- combinations of these.

A step is what ``fit`` runs: forward and loss under the run's precision (bf16 autocast, the
config's auto choice on a CPU with bf16 units; ``--precision 32`` for fp32), backward, AdamW.
Batches of 128 random images (the step's cost does not depend on the pixels). The variants
take turns call by call (``bench.attention.interleaved``), so load from other processes hits all
alike; the accuracy of a variant is not measured here (that takes a training run).

    taskset -c 1 python bench/cct_step.py    # writes bench/results/cct_step.json
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from bench.attention import interleaved  # noqa: E402
from bench.common import table, write_json  # noqa: E402
from vecset.backbone import Backbone  # noqa: E402
from vecset.encoders import ConvTokenizer  # noqa: E402
from vecset.heads import SequenceHead  # noqa: E402
from vecset.pipelines.training.step import forward_task  # noqa: E402

B, D = 128, 128
VARIANTS = {  # name: (strided, hidden channels, channels-last: "model" and images, "input" images only)
    "base": (False, 32, None),
    "channels_last": (False, 32, "model"),
    "channels_last_input": (False, 32, "input"),
    "hidden16": (False, 16, None),
    "strided": (True, 32, None),
    "strided+hidden16": (True, 16, None),
    "strided+channels_last": (True, 32, "model"),
    "strided+hidden16+channels_last": (True, 16, "model"),
}
# operator families of the profile (self time), matched on the operator's name in this order
FAMILIES = [("conv", ("conv", "mkldnn_convolution")), ("max_pool", ("max_pool",)),
            ("matmul", ("addmm", "::mm", "bmm", "matmul", "linear")),
            ("attention", ("scaled_dot_product", "flash_attention", "_efficient_attention")),
            ("norm", ("layer_norm",)), ("optimizer", ("adam", "_foreach", "lerp", "addcdiv", "sqrt")),
            ("cast", ("to_copy", "::copy_", "::to")), ]


def strided_tokenizer(tok: ConvTokenizer) -> None:
    """Swaps each [conv, ReLU, max-pool] of ``tok`` for [conv of stride 2, ReLU]: the same grid
    (a 3x3 stride-2 convolution with padding 1 halves a side rounding up, as the pooling does)."""
    blocks: list[nn.Module] = []
    for m in tok.conv:
        if isinstance(m, nn.Conv2d):
            conv = nn.Conv2d(m.in_channels, m.out_channels, m.kernel_size, stride=2, padding=m.padding, bias=False)
            nn.init.kaiming_normal_(conv.weight)
            blocks += [conv, nn.ReLU()]
    tok.conv = nn.Sequential(*blocks)


def make_step(strided: bool, hidden: int, channels_last: str | None, bf16: bool, seed: int = 0):
    torch.manual_seed(seed)
    enc = ConvTokenizer(1, D, layers=3, hidden_channels=hidden, positional="sinusoidal")
    if strided:
        strided_tokenizer(enc)
    backbone = Backbone(D, depth=4, heads=4, mlp_ratio=2.0, dropout=0.0, drop_path=0.0)
    head = SequenceHead(D, 10, pooling="attention", dropout=0.0, label_smoothing=0.1)
    model = nn.ModuleList([enc, backbone, head])
    image = torch.randn(B, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    if channels_last == "model":
        model.to(memory_format=torch.channels_last)
    if channels_last is not None:
        image = image.contiguous(memory_format=torch.channels_last)
    batch = {"image": image, "y": torch.randint(0, 10, (B,)), "ids": torch.arange(B)}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)

    def step() -> float:
        with torch.autocast("cpu", torch.bfloat16, enabled=bf16):
            out = forward_task(enc, backbone, head, batch)
            loss = head.loss(out, batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    grid = enc(batch).x.shape[1]
    return step, sum(p.numel() for p in model.parameters()), grid


def profile(step, steps: int) -> dict:
    """Self CPU time by operator family over ``steps`` steps (after one warmup step)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    step()
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    total, by_family, top = 0.0, defaultdict(float), []
    for ev in prof.key_averages():
        t = ev.self_cpu_time_total / 1e3 / steps  # ms per step
        total += t
        family = next((f for f, keys in FAMILIES if any(k in ev.key for k in keys)), "other")
        by_family[family] += t
        top.append((t, ev.key))
    top.sort(reverse=True)
    return {"ms_per_step": total, "share": {f: round(t / total, 3) for f, t in sorted(by_family.items())},
            "top_ops_ms": [{"op": k, "ms": round(t, 2)} for t, k in top[:15]]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=12)
    ap.add_argument("--profile_steps", type=int, default=4)
    ap.add_argument("--precision", choices=["bf16", "32"], default="bf16")
    ap.add_argument("--only", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--out", default="cct_step")
    args = ap.parse_args()
    torch.set_num_threads(1)
    bf16 = args.precision == "bf16"
    steps, rows = {}, []
    for name in args.only:
        fn, params, grid = make_step(*VARIANTS[name], bf16=bf16)
        steps[name] = fn
        rows.append({"variant": name, "parameters": params, "vectors": grid, "first_loss": float(fn())})
    first = {r["variant"]: r["first_loss"] for r in rows}
    for r in rows:  # the base's model and seed in another memory format: its loss, rounding apart
        same_model = VARIANTS[r["variant"]][:2] == VARIANTS["base"][:2]
        r["loss_vs_base"] = abs(r["first_loss"] - first["base"]) if same_model and "base" in first else None
    profiles = {name: profile(steps[name], args.profile_steps) for name in ("base", "strided") if name in steps}
    times = interleaved(steps, args.repeats)
    base = times["base"]["median_s"] if "base" in times else None
    for r in rows:
        t = times[r["variant"]]
        r.update(step_ms=t["median_s"] * 1e3, min_ms=t["min_s"] * 1e3, max_ms=t["max_s"] * 1e3,
                 images_per_s=B / t["median_s"], vs_base=(base / t["median_s"]) if base else None)
    print(table(rows, ["variant", "parameters", "vectors", "loss_vs_base", "step_ms", "min_ms", "max_ms",
                       "images_per_s", "vs_base"]))
    for name, p in profiles.items():
        print(f"\n{name}: {p['ms_per_step']:.0f} ms of operator self time a step; shares: "
              + ", ".join(f"{f} {s:.0%}" for f, s in sorted(p["share"].items(), key=lambda kv: -kv[1])))
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    path = write_json(args.out, {"batch": B, "precision": "bf16-mixed" if bf16 else "32-true", "threads": 1,
                                 "loadavg_at_end": load, "rows": rows, "profiles": profiles})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
