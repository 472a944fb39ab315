"""Peak memory of ``vecset predict`` on a long recording with truncated attention.

Concatenates corpus utterances into one recording of ``--minutes`` (10 minutes = 60,000
frames), runs ``vecset predict`` with a speech config and checkpoint on it, and on one short
utterance for comparison, and reports each child's peak resident memory
(``getrusage(RUSAGE_CHILDREN).ru_maxrss``) and wall seconds. Dense attention over 60,000
frames would need 60,000^2 x heads x 4 bytes per layer for the weights alone (about 58 GB with
4 heads); the windowed blocked path needs N x 3 x window.

Usage:
    python bench/speech_long_predict.py --ckpt runs/speech_frames/version_0/checkpoints/last.ckpt
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import soundfile as sf


def make_recording(root: Path, minutes: float, out: Path) -> int:
    files = [f for f in sorted(root.rglob("*")) if f.suffix.lower() in (".wav", ".flac")]
    need = int(minutes * 60 * 16000)
    parts, n = [], 0
    for f in files:
        x, sr = sf.read(f, dtype="int16")
        if sr != 16000:
            raise SystemExit(f"{f}: {sr} Hz; this benchmark concatenates 16 kHz corpus files")
        parts.append(x)
        n += len(x)
        if n >= need:
            break
    if n < need:
        raise SystemExit(f"{root} holds only {n / 16000:.0f} s of audio, need {minutes} minutes")
    out.parent.mkdir(parents=True, exist_ok=True)
    sf.write(out, np.concatenate(parts)[:need], 16000, subtype="PCM_16")
    return need


def predict_peak(config: str, ckpt: str, audio: Path) -> dict:
    """Run vecset predict in a fresh child; its own peak RSS (a fresh child per call)."""
    code = (
        "import resource, subprocess, sys, json, time; t=time.time(); "
        "r=subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(json.dumps({'rc': r.returncode, 'wall_s': round(time.time()-t, 1), "
        "'peak_rss_mib': round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024, 1), "
        "'tail': r.stdout[-400:] + r.stderr[-800:]}))"
    )
    cmd = [sys.executable, "-c", code, sys.executable, "-m", "vecset.pipelines.cli", "predict", "--config", config,
           "--ckpt_path", ckpt, "--data.predict_paths", f"[{audio}]", "--data.batch_size", "1"]
    res = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
    if res["rc"]:
        raise SystemExit(f"vecset predict failed on {audio}:\n{res['tail']}")
    res.pop("tail")
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="configs/speech_frames.yaml")
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--root", default="data/speech", help="corpus whose utterances are concatenated")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--out", default="bench/results/speech_long_predict.json")
    a = ap.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    tmp = Path("bench/results/tmp")
    long_wav = tmp / "long_recording.wav"
    n = make_recording(Path(a.root), a.minutes, long_wav)
    short_wav = next(f for f in sorted(Path(a.root).rglob("*")) if f.suffix.lower() in (".wav", ".flac"))
    t0 = time.time()
    rows = {"long": {"file": str(long_wav), "seconds": n / 16000, "frames": 1 + (n - 400) // 160,
                     **predict_peak(a.config, a.ckpt, long_wav)},
            "short": {"file": str(short_wav), "seconds": sf.info(str(short_wav)).frames / 16000,
                      **predict_peak(a.config, a.ckpt, short_wav)}}
    print(f"{'input':8s} {'seconds':>8s} {'peak RSS MiB':>12s} {'wall s':>7s}")
    for k, r in rows.items():
        print(f"{k:8s} {r['seconds']:8.1f} {r['peak_rss_mib']:12.1f} {r['wall_s']:7.1f}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"config": a.config, "checkpoint": a.ckpt, "results": rows,
                                       "total_seconds": round(time.time() - t0, 1),
                                       "note": "wall seconds on a shared 2-core machine"}, indent=2) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
