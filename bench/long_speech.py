"""Truncated attention over long speech: time per frame and peak memory at 7,500 to 60,000
frames (75 s to 10 min at 10 ms per frame), inference, batch of one.

The Backbone (d_model 192, 4 heads, depth 4: the speech configs' size) with window=64
runs on the blocked local path, whose memory grows with N x window. Full attention (no
window) is measured where it finishes in the time budget; beyond that the row says why.

    python bench/long_speech.py           # writes bench/results/long_speech.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench.common import in_fresh_process, peak_rss_mb, rss_mb, table, write_json  # noqa: E402

D, HEADS, DEPTH, WINDOW = 192, 4, 4, 64
NS = (7500, 15000, 30000, 60000)


def one(kind: str, n: int) -> dict:
    from vecset.backbone import Backbone, VectorSet

    torch.manual_seed(0)
    bb = Backbone(d_model=D, depth=DEPTH, heads=HEADS, window=WINDOW if kind == "truncated" else None).eval()
    x = torch.randn(1, n, D)
    vs = VectorSet(x=x, mask=torch.ones(1, n, dtype=torch.bool))
    base = rss_mb()
    with torch.inference_mode():
        t = time.perf_counter()
        out = bb(vs)
        secs = time.perf_counter() - t
    assert torch.isfinite(out.x).all()
    return {"attention": kind, "N": n, "seconds": secs, "ms_per_frame": 1000 * secs / n,
            "peak_extra_mb": peak_rss_mb() - base}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", nargs=2, metavar=("KIND", "N"))
    ap.add_argument("--full-up-to", type=int, default=60000, help="largest N to run full attention at")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]))))
        return
    rows = []
    for kind in ("truncated", "full"):
        for n in NS:
            if kind == "full" and n > args.full_up_to:
                rows.append({"attention": kind, "N": n, "note": f"not run (time grows with N^2; over --full-up-to {args.full_up_to})"})
                continue
            r = in_fresh_process(__file__, [kind, str(n)])
            rows.append({"attention": kind, "N": n, **r})
            print(f"  {kind:9s} N={n:6d} {r}", flush=True)
    trunc = {r["N"]: r for r in rows if r["attention"] == "truncated" and "ms_per_frame" in r}
    if NS[0] in trunc:
        for r in trunc.values():
            r["time_per_frame_vs_7500"] = r["ms_per_frame"] / trunc[NS[0]]["ms_per_frame"]
    print(table(rows, ["attention", "N", "seconds", "ms_per_frame", "peak_extra_mb", "time_per_frame_vs_7500", "note", "error"]))
    path = write_json("long_speech", {"d_model": D, "heads": HEADS, "depth": DEPTH, "window": WINDOW, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
