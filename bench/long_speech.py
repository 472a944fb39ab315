"""Long speech: the backbone alone over 7,500 to 60,000 frames, and ``vecset predict`` on 10
minutes, 1 hour and 3 hours of audio.

Backbone rows: the Backbone (d_model 192, 4 heads, depth 4) with window=64 on the blocked
local path, whose memory grows with N x window, against full attention where it finishes;
inference, batch of one, in a fresh process each.

Predict rows: a recording made by concatenating the sample's utterances (data/speech, over
and over) into a FLAC file under bench/results/tmp/, run through ``vecset predict`` with the
speech config (configs/speech_frames.yaml: truncated attention, window 8, depth 4, d 128) in a
fresh child process each; the child's peak resident memory (``ru_maxrss``), wall seconds,
milliseconds per frame, the real-time factor (wall seconds / audio seconds), and the time per
frame beyond a 6-second run's wall time (the process's fixed cost: imports, CLI, checkpoint),
also relative to the first (10-minute) row. predict reads, featurizes and runs the file in chunks
(``--data.predict.chunk_frames``, docs/speech.md), so memory should not grow with the length.
The checkpoint: ``--ckpt``, or a 2-step fit of the config on 4 utterances (memory and time do
not depend on what the weights learned).

    python bench/long_speech.py        # both parts: bench/results/long_speech.json, long_speech_predict.json
    python bench/long_speech.py --skip-backbone --minutes 10 60 180 --note "an idle machine"
    python bench/long_speech.py --skip-backbone --minutes 60 --precisions 32-true bf16-mixed 32-true bf16-mixed
        # the same rows in each precision, one run: long_speech_predict_precision.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench.common import fit_in_child, in_fresh_process, peak_rss_mb, rss_mb, table, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
D, HEADS, DEPTH, WINDOW = 192, 4, 4, 64
NS = (7500, 15000, 30000, 60000)
MINUTES = (10, 60, 180)
STARTUP_MINUTES = 0.1  # 6 s: what a predict process costs before the length matters
CONFIG = "configs/speech_frames.yaml"


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


def backbone_rows(full_up_to: int) -> list[dict]:
    rows = []
    for kind in ("truncated", "full"):
        for n in NS:
            if kind == "full" and n > full_up_to:
                rows.append({"attention": kind, "N": n, "note": f"not run (time grows with N^2; over --full-up-to {full_up_to})"})
                continue
            r = in_fresh_process(__file__, [kind, str(n)])
            rows.append({"attention": kind, "N": n, **r})
            print(f"  {kind:9s} N={n:6d} {r}", flush=True)
    trunc = {r["N"]: r for r in rows if r["attention"] == "truncated" and "ms_per_frame" in r}
    if NS[0] in trunc:
        for r in trunc.values():
            r["time_per_frame_vs_7500"] = r["ms_per_frame"] / trunc[NS[0]]["ms_per_frame"]
    return rows


# --- vecset predict on long recordings ------------------------------------------------------
def make_recording(root: Path, minutes: float, out: Path) -> int:
    """The corpus's 16 kHz utterances end to end, over again until ``minutes``, written block by
    block (the bench's own memory stays small); its sample count."""
    import soundfile as sf

    files = [f for f in sorted(root.rglob("*")) if f.suffix.lower() in (".wav", ".flac")]
    need = int(minutes * 60 * 16000)
    if out.exists() and sf.info(str(out)).frames == need:
        return need
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with sf.SoundFile(str(out), "w", 16000, 1, subtype="PCM_16", format="FLAC") as w:
        while n < need:
            for f in files:
                x, sr = sf.read(f, dtype="int16")
                if sr != 16000:
                    raise SystemExit(f"{f}: {sr} Hz; this benchmark concatenates 16 kHz corpus files")
                x = x[: need - n]
                w.write(x)
                n += len(x)
                if n >= need:
                    break
    return need


def predict_in_child(config: str, ckpt: str, audio: Path, extra: list[str]) -> dict:
    """``vecset predict`` in a fresh child of a fresh wrapper, so ``RUSAGE_CHILDREN``'s
    ``ru_maxrss`` is that child's peak alone."""
    code = ("import resource, subprocess, sys, json, time; t=time.time(); "
            "r=subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "print(json.dumps({'rc': r.returncode, 'wall_s': time.time()-t, "
            "'peak_rss_mib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024, "
            "'tail': r.stdout[-400:] + r.stderr[-1500:]}))")
    cmd = [sys.executable, "-c", code, sys.executable, "-m", "vecset", "predict", "--config", config,
           "--ckpt_path", ckpt, "--data.predict.paths", f"[{audio}]", "--trainer.enable_progress_bar", "false", *extra]
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE"),
           "VECSET_RUN_NAME": "long_speech_bench", "VECSET_RUN_VERSION": str(int(time.time() * 1000))}
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if res["rc"]:
        raise SystemExit(f"vecset predict failed on {audio}:\n{res['tail']}")
    res.pop("tail")
    return res


def predict_rows(config: str, ckpt: str, minutes: list[float], extra: list[str]) -> list[dict]:
    """One row per length, after a 6-second row: the fixed cost of a predict process (imports,
    the CLI, the checkpoint), subtracted for the time per frame beyond it."""
    rows = []
    for m in [STARTUP_MINUTES, *minutes]:
        audio = ROOT / "bench" / "results" / "tmp" / f"long_{m:g}min.flac"
        n = make_recording(ROOT / "data" / "speech", m, audio)
        frames = 1 + (n - 400) // 160
        r = predict_in_child(config, ckpt, audio, extra)
        row = {"minutes": m, "frames": frames, "peak_rss_mib": r["peak_rss_mib"], "wall_s": r["wall_s"],
               "ms_per_frame": 1000 * r["wall_s"] / frames, "real_time_factor": r["wall_s"] / (n / 16000)}
        if rows:
            row["ms_per_frame_beyond_startup"] = 1000 * (r["wall_s"] - rows[0]["wall_s"]) / (frames - rows[0]["frames"])
        rows.append(row)
        print(f"  {m:g} min: {row}", flush=True)
    for r in rows[1:]:
        r["time_per_frame_vs_first"] = r["ms_per_frame_beyond_startup"] / rows[1]["ms_per_frame_beyond_startup"]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--one", nargs=2, metavar=("KIND", "N"))
    ap.add_argument("--full-up-to", type=int, default=60000, help="largest N to run full attention at")
    ap.add_argument("--skip-backbone", action="store_true", help="only the vecset predict rows")
    ap.add_argument("--skip-predict", action="store_true", help="only the backbone rows")
    ap.add_argument("--minutes", type=float, nargs="+", default=list(MINUTES))
    ap.add_argument("--config", default=CONFIG)
    ap.add_argument("--ckpt", help="a checkpoint of --config (default: a 2-step fit of it)")
    ap.add_argument("--predict-args", default="",
                    help="more vecset predict options, one string: --predict-args='--data.predict.chunk_frames 3000'")
    ap.add_argument("--precisions", nargs="+", metavar="PRECISION",
                    help="run the predict rows once per --trainer.precision value (e.g. 32-true bf16-mixed)")
    ap.add_argument("--note", default="", help="how loaded the machine was")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]))))
        return
    if not args.skip_backbone:
        rows = backbone_rows(args.full_up_to)
        print(table(rows, ["attention", "N", "seconds", "ms_per_frame", "peak_extra_mb", "time_per_frame_vs_7500",
                           "note", "error"]))
        path = write_json("long_speech", {"d_model": D, "heads": HEADS, "depth": DEPTH, "window": WINDOW,
                                          "note": args.note, "rows": rows})
        print(f"wrote {path}")
    if not args.skip_predict:
        ckpt = args.ckpt
        if ckpt is None:
            run_dir, _ = fit_in_child(args.config, ["--trainer.max_steps", "2", "--data.splits.max_utterances", "4",
                                                    "--plots", "false", "--trainer.enable_progress_bar", "false"])
            ckpt = json.loads((run_dir / "results.json").read_text())["last_checkpoint"]
        columns = ["minutes", "frames", "peak_rss_mib", "wall_s", "ms_per_frame", "real_time_factor",
                   "ms_per_frame_beyond_startup", "time_per_frame_vs_first"]
        if not args.precisions:
            rows = predict_rows(args.config, ckpt, args.minutes, shlex.split(args.predict_args))
            print(table(rows, columns))
            path = write_json("long_speech_predict", {"config": args.config, "checkpoint": ckpt,
                                                      "predict_args": args.predict_args, "note": args.note,
                                                      "rows": rows})
        else:
            rows = []
            for precision in args.precisions:
                extra = [*shlex.split(args.predict_args), "--trainer.precision", precision]
                rows += [{"precision": precision, **r} for r in predict_rows(args.config, ckpt, args.minutes, extra)]
            # the longest recording's time per frame beyond start-up, against the first precision's
            # median (a precision named twice runs twice, interleaved: load changes hit both)
            longest = max(args.minutes)
            ref = statistics.median(r["ms_per_frame_beyond_startup"] for r in rows
                                    if r["minutes"] == longest and r["precision"] == args.precisions[0])
            for r in rows:
                if r["minutes"] == longest:
                    r["speedup_vs_first_precision"] = ref / r["ms_per_frame_beyond_startup"]
            print(table(rows, ["precision", *columns, "speedup_vs_first_precision"]))
            path = write_json("long_speech_predict_precision", {"config": args.config, "checkpoint": ckpt,
                                                                "predict_args": args.predict_args,
                                                                "note": args.note, "rows": rows})
        print(f"wrote {path}")

if __name__ == "__main__":
    main()
