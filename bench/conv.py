"""Depthwise convolution over a sequence on the CPU, forward + backward: PyTorch's
``nn.Conv1d(groups=D)`` against ``vecset.backbone.block._DepthwiseConv1d`` (the same forward; the
backward as forward convolutions and K products), at the speech configs' shapes (batch 8,
d 128). The two take turns call by call (medians of repeats); outputs and gradients are
checked equal first. Speech batches are padded to their longest utterance: where the corpus
is there (``--corpus``, default the full generated one), the share of shuffled training
batches of 8 that reach 512 frames is measured too.

    python bench/conv.py            # writes bench/results/conv.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bench.attention import interleaved  # noqa: E402
from bench.common import table, write_json  # noqa: E402
from vecset.backbone.block import _DepthwiseConv1d  # noqa: E402

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


def long_batch_share(corpus: Path, batch: int = B, shuffles: int = 20) -> dict | None:
    """Share of shuffled training batches whose longest utterance has >= 512 frames."""
    import soundfile as sf

    from vecset.backbone.block import SLOW_DEPTHWISE_BACKWARD
    from vecset.encoders.speech import num_frames
    from vecset.pipelines.speech.files import list_audio

    if not (corpus / "train.lst").exists():
        return None
    frames = torch.tensor([num_frames(sf.info(str(f)).frames) for f in list_audio(corpus, "train.lst")])
    g = torch.Generator().manual_seed(0)
    longest = [frames[idx].max() for _ in range(shuffles) for idx in torch.randperm(len(frames), generator=g).split(batch)]
    return {"corpus": str(corpus), "utterances": len(frames), "batch": batch, "batches": len(longest),
            "share_of_batches_at_or_past_threshold": float(sum(x >= SLOW_DEPTHWISE_BACKWARD for x in longest)) / len(longest)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--corpus", type=Path, default=Path("data/speech_full"))
    args = p.parse_args()
    share = long_batch_share(args.corpus)
    if share is None:
        print(f"{args.corpus}: no train.lst (make speech-corpus), batch lengths not measured")
    else:
        print(f"{share['share_of_batches_at_or_past_threshold']:.0%} of {share['batches']} shuffled training batches "
              f"of {share['batch']} in {share['corpus']} reach 512 frames")
    rows = [case(n, k, args.repeats) for n in (374, 500, 600, 1000) for k in (15, 31)]
    print(f"depthwise convolution, batch {B}, d {D}, forward + backward, float32 on "
          f"{torch.get_num_threads()} threads (medians of {args.repeats})")
    print(table(rows, ["N", "K", "torch_ms", "ours_ms", "speedup"]))
    print(f"wrote {write_json('conv', {'batch': B, 'd_model': D, 'repeats': args.repeats, 'rows': rows, 'batch_lengths': share})}")


if __name__ == "__main__":
    main()
