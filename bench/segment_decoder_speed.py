"""How fast SegmentDecoder (heads/segment_decoder.py) decodes long inputs, and that its time
grows linearly with the number of frames: 1 and 10 minutes of 10 ms frames, 50 labels, the
speech config's settings (switch penalty 2, minimum duration 3), in memory and through the
on-disk back-pointer store that chunked predict uses.

    python bench/segment_decoder_speed.py [--repeats 5]

Prints a table (median seconds, frames per second, time per frame against the 1-minute case of
the same mode in the same run) and writes bench/results/segment_decoder_speed.json. This was a
unit test's ``< 30 s`` bound (tests/heads/test_segment_decoder.py) until issue #27: a unit test
asserts the decode, a benchmark its speed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench.common import table, timed, write_json  # noqa: E402
from vecset.heads.segment_decoder import SegmentDecoder  # noqa: E402

LABELS, PENALTY, MIN_DURATION = 50, 2.0, 3
CHUNK = 6_000  # frames per push through the store: a minute, as chunked predict feeds it


def decode(logits: torch.Tensor, store: str | None) -> None:
    dec = SegmentDecoder(PENALTY, MIN_DURATION)
    if store is None:
        dec(logits)
        return
    stream = dec.stream(*logits.shape, store=store)
    for a in range(0, len(logits), CHUNK):
        stream.push(logits[a:a + CHUNK])
    stream.finish()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--minutes", type=float, nargs="+", default=[1, 10])
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mode, store in (("memory", None), ("files", os.path.join(tmp, "bp"))):
            base = None
            for minutes in args.minutes:
                frames = int(minutes * 6000)
                torch.manual_seed(0)
                logits = torch.randn(frames, LABELS) * 3
                t = timed(lambda lg=logits, st=store: decode(lg, st), repeats=args.repeats, warmup=1)
                per_frame = t["median_s"] / frames
                base = per_frame if base is None else base
                rows.append({"mode": mode, "minutes": minutes, "frames": frames, **t,
                             "frames_per_s": frames / t["median_s"], "per_frame_vs_first": per_frame / base})
    print(table(rows, ["mode", "minutes", "frames", "median_s", "min_s", "max_s", "frames_per_s",
                       "per_frame_vs_first"]))
    path = write_json("segment_decoder_speed", {
        "labels": LABELS, "switch_penalty": PENALTY, "min_duration": MIN_DURATION, "chunk_frames": CHUNK,
        "load_average": os.getloadavg(), "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
