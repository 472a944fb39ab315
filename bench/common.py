"""Shared helpers for the benchmarks: machine facts, repeated timing, peak memory in a
fresh process, tables and JSON."""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    return {
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (VmHWM: unlike ru_maxrss, it is not
    inherited from the parent across fork/exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def timed(fn, repeats: int, warmup: int = 1) -> dict:
    """Median and spread (min, max) of ``repeats`` calls after ``warmup`` calls, seconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "repeats": repeats}


def in_fresh_process(script: str, args: list[str], timeout: float = 900) -> dict:
    """Run ``python script --one args...`` and parse the JSON it prints last: each case gets
    its own process, so its peak memory is its own."""
    cmd = [sys.executable, script, "--one", *args]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if out.returncode != 0:
        lines = (out.stderr or out.stdout).strip().splitlines()
        return {"error": lines[-1] if lines else f"exit code {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(rows: list[dict], cols: list[str]) -> str:
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
        return "" if v is None else str(v)

    cells = [[fmt(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(x[i]) for x in cells)) for i, c in enumerate(cols)]
    line = lambda xs: "| " + " | ".join(x.ljust(w) for x, w in zip(xs, widths, strict=True)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cols), sep, *(line(x) for x in cells)])


def write_json(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"machine": machine(), "command": "python " + " ".join(sys.argv), **payload}
    path.write_text(json.dumps(payload, indent=2))
    return path


def step_flops(B: int, N: int, d: int, depth: int, mlp: float) -> float:
    """Matrix-multiply FLOPs of one training step of a pre-norm Transformer (B sets of N
    vectors of width d, ``depth`` blocks, MLP hidden width mlp x d): backward counted as 2x
    forward (input and weight gradients), so 3x forward; a fused attention kernel's backward
    also recomputes QK^T, which is not counted (it is not needed work)."""
    dense = 2 * B * N * (4 * d * d + 2 * mlp * d * d)  # qkv + out projections, and the MLP
    attn = 2 * 2 * B * N * N * d  # QK^T and AV, all heads
    return 3 * depth * (dense + attn)


def error_line(output: str) -> str | None:
    """The last ``SomeError: message`` line of a traceback in ``output`` (None if there is none)."""
    lines = [ln for ln in output.splitlines() if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b.*", ln)]
    return lines[-1] if lines else None


def run_fit(config: str, args: list[str] | None = None, env: dict | None = None,
            log: Path | None = None) -> dict:
    """``vecset fit --config config args`` in a child process run from the repository root.

    Returns ``run_dir`` (from the ``results: <path>`` line; None when it failed), ``cpu_seconds``
    (user + system), ``process_seconds``, ``returncode`` and ``error`` (the traceback's last
    ``...Error: message`` line, else the output's last line; None when it succeeded). The whole
    output goes to ``log`` when given."""
    root = Path(__file__).resolve().parents[1]
    args = list(args or [])
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE"),
           **(env or {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"vecset fit --config {config} {' '.join(args)}".rstrip(), flush=True)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "vecset", "fit", "--config", config, *args],
                         cwd=root, env=env, capture_output=True, text=True)
    secs = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(out.stdout + "\n--- stderr ---\n" + out.stderr)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    res = {"run_dir": None, "cpu_seconds": round(cpu, 1), "process_seconds": round(secs, 1),
           "returncode": out.returncode, "error": None}
    if out.returncode:
        text = out.stdout + "\n" + out.stderr
        last = text.strip().splitlines()
        res["error"] = error_line(out.stderr) or error_line(out.stdout) or (last[-1] if last else f"exit {out.returncode}")
        res["output_tail"] = out.stdout[-3000:] + out.stderr[-3000:]
        return res
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("results: ")][-1]
    res["run_dir"] = root / Path(line.split("results: ", 1)[1]).parent
    return res


def fit_in_child(config: str, args: list[str] | None = None) -> tuple[Path, float]:
    """``vecset fit --config config args`` in a child process run from the repository root:
    its run directory (from the ``results: <path>`` line) and its CPU seconds (user + system);
    a failed run ends this process with its output (``run_fit`` returns the failure instead)."""
    res = run_fit(config, args)
    if res["returncode"]:
        sys.stderr.write(res["output_tail"])
        raise SystemExit(f"vecset fit --config {config} failed (exit {res['returncode']})")
    return res["run_dir"], res["cpu_seconds"]
