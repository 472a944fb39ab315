"""Depthwise convolution over a sequence on the CPU, forward + backward: PyTorch's
``nn.Conv1d(groups=D)`` against ``backbone.block._DepthwiseConv1d`` (the same forward; the
backward as forward convolutions and K products), at the speech configs' shapes (batch 8,
d 128; speech batches are padded to their longest utterance, and 87% of the full corpus's
training batches are longer than 512 frames). The two take turns call by call (medians of
repeats); outputs and gradients are checked equal first.

    python bench/conv.py            # writes bench/results/conv.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from backbone.block import _DepthwiseConv1d  # noqa: E402
from bench.attention import interleaved  # noqa: E402
from bench.common import table, write_json  # noqa: E402

B, D = 8, 128


def case(n: int, k: int, repeats: int) -> dict:
    torch.manual_seed(0)
    x = torch.randn(B, D, n, requires_grad=True)
    w = torch.randn(D, 1, k, requires_grad=True)
    b = torch.randn(D, requires_grad=True)
    fns = {"torch": lambda: F.conv1d(x, w, b, padding=k // 2, groups=D),
           "ours": lambda: _DepthwiseConv1d.apply(x, w, b)}
    grads = {m: torch.autograd.grad(f().pow(2).mean(), (x, w, b)) for m, f in fns.items()}
    for a, r in zip(grads["ours"], grads["torch"], strict=True):
        torch.testing.assert_close(a, r, atol=1e-5, rtol=1e-4)

    def step(f):
        return lambda: f().pow(2).mean().backward()

    t = interleaved({m: step(f) for m, f in fns.items()}, repeats)
    return {"N": n, "K": k, "torch_ms": t["torch"]["median_s"] * 1e3, "ours_ms": t["ours"]["median_s"] * 1e3,
            "speedup": t["torch"]["median_s"] / t["ours"]["median_s"],
            "spread_ms": {m: [t[m]["min_s"] * 1e3, t[m]["max_s"] * 1e3] for m in t}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=15)
    args = p.parse_args()
    rows = [case(n, k, args.repeats) for n in (374, 500, 600, 1000) for k in (15, 31)]
    print(f"depthwise convolution, batch {B}, d {D}, forward + backward, float32 on "
          f"{torch.get_num_threads()} threads (medians of {args.repeats})")
    print(table(rows, ["N", "K", "torch_ms", "ours_ms", "speedup"]))
    print(f"wrote {write_json('conv', {'batch': B, 'd_model': D, 'repeats': args.repeats, 'rows': rows})}")


if __name__ == "__main__":
    main()
