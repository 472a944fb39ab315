"""What the backbone's switches do on real data: one switch at a time from each job's config.

Issue #19. For each job (speech frames, Fashion-MNIST, FreeSolv) every value of every switch
that applies (score function, normalization, positional encoding, attention window, heads,
graph attention) is trained from the job's own config with only that switch changed, with the
same wall-time budget (``trainer.max_time``), the same ``max_epochs`` (the cosine schedule's
length) and the same seeds; the job's test metric of the best-validation checkpoint
(``results.json``) is read back and summarized as mean +- std over the seeds. Two more jobs
measure length generalization (the 128 vs 129 problem): speech trained on utterances cut to
2 s (``fit_max_frames``) and G2P trained on words of at most 6 letters (``fit_max_letters``),
both tested on every length, by length bucket (``bench/length_buckets.py``), for each
positional encoding; a learned table must fail with its clear error there.

The plan is declarative (``PLAN``): per job a base config, fixed overrides shared by all its
runs (data subsets, the crop), its switches (each value a set of config overrides, the keys a
switch may change listed with it), budget, epochs and seeds. Each run gets its own config
file (the base config with the overrides merged: ``runs/ablations/configs/``) and a fresh
``vecset fit`` process (``bench/common.py``'s ``run_fit``). A value whose model the code
rejects at construction (a ``ValueError`` from a constructor, e.g. the Gaussian score with
relu) becomes a ``rejected: <reason>`` row without a run. Each run's record is a JSON file
(``bench/results/ablations/runs/<job>/<run>.json``); a run whose record exists is skipped, so
an interrupted study continues where it stopped. Per job: ``bench/results/ablations/<job>.json``
(the rows), ``<job>.png`` (the metric per switch value, error bars = std over seeds), and
``bench/report.py`` puts the tables into BENCHMARKS.md.

    python bench/ablations.py --plan                  # the plan and its estimated time, nothing run
    python bench/ablations.py                         # the whole study (about 2.2 hours, 2 cores)
    python bench/ablations.py --jobs freesolv         # one job
    python bench/ablations.py --report                # rows, figures, BENCHMARKS.md from the records
    python bench/ablations.py --recover-records       # records missing: rebuild them from the job JSONs
    python bench/ablations.py --quick                 # a smoke run in minutes: tiny data, 15 s budgets;
                                                      # its files go to bench/results/tmp/ablations/
"""

from __future__ import annotations

import argparse
import copy
import importlib
import inspect
import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from bench.common import RESULTS, machine, run_fit, table  # noqa: E402

# config paths of the switches (dotted keys into the YAML config)
ENC = "model.init_args.encoder.init_args"
BB = "model.init_args.backbone.init_args"
DATA = "data.init_args"
LEARNED_TABLE_ERROR = "the learned positional table holds max_len"  # Learned1D's message


@dataclass(frozen=True)
class Switch:
    """One choice of the backbone: its values, each a set of config overrides (dotted key ->
    value; an empty dict, or the config's own values, is the base), and every key a value of
    this switch may change (the plan's test holds each variant to them)."""

    name: str
    keys: tuple[str, ...]
    values: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Job:
    """A job of the study: a base config (``config`` with ``fixed`` merged), the metric read from
    ``results.json``'s ``test``, the budget and the switches.

    ``max_epochs`` (the schedule's length, the same for every run of the job): None measures it
    at the start of the job, once (``size_epochs``; kept in ``epochs.json`` beside the job's
    records, so a resumed study keeps it).
    ``seed_keys``: config keys set to the seed of a repetition (FreeSolv: the split too).
    ``lengths``: (``bench/length_buckets.py`` length, bucket edges) to score the test split by
    input length. ``expected_errors``: switch value -> the text its run must fail with."""

    name: str
    config: str
    metric: str
    higher_is_better: bool
    budget_s: int
    max_epochs: int | None  # None: the epochs the base config completes in the budget (measured)
    seeds: tuple[int, ...]
    switches: tuple[Switch, ...]
    fixed: dict[str, Any] = field(default_factory=dict)
    seed_keys: tuple[str, ...] = ("seed_everything",)
    # process start, data setup and test per run, for the time estimate only (the plan's values:
    # process seconds minus the budget in the full study on the idle 2-core machine, 2026-12-01,
    # rounded up)
    overhead_s: int = 30
    lengths: tuple[str, tuple[int, ...]] | None = None
    expected_errors: dict[str, str] = field(default_factory=dict)
    note: str = ""


# the merged configs of the runs (not committed; the tests point it at a temporary folder)
CONFIGS = ROOT / "runs" / "ablations" / "configs"


def shown(path: Path) -> str:
    """``path`` relative to the repository when it lies inside it (as the records name configs)."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def score_switch() -> Switch:
    return Switch("score", (f"{BB}.score",), {v: {f"{BB}.score": v} for v in ("scaled_dot", "dot", "additive", "gaussian")})


def normalize_switch() -> Switch:
    return Switch("normalize", (f"{BB}.normalize",), {v: {f"{BB}.normalize": v} for v in ("softmax", "relu", "sigmoid")})


def heads_switch(also: tuple[str, ...] = ()) -> Switch:
    """Attention heads; ``also``: keys that must follow them (a per-head graph bias)."""
    keys = (f"{BB}.heads", *also)
    return Switch("heads", keys, {str(h): {k: h for k in keys} for h in (1, 2, 4, 8)})


def sequence_positional(learned_max_len: int, relative: int = 16) -> Switch:
    """1-D positions of a sequence encoder: none, sinusoidal, a learned table of
    ``learned_max_len`` positions, relative (T5-style score biases, no absolute encoding)."""
    pos, ml, rel = f"{ENC}.positional", f"{ENC}.max_len", f"{BB}.relative_positions"
    return Switch("positional", (pos, ml, rel), {
        "none": {pos: "none"},
        "sinusoidal": {pos: "sinusoidal"},
        "learned": {pos: "learned", ml: learned_max_len},
        "relative": {pos: "none", rel: relative},
    })


SPEECH_CROP = 200  # frames: 2 s
G2P_SHORT = 6  # letters

PLAN: dict[str, Job] = {j.name: j for j in [
    Job("speech_frames", "configs/speech_frames.yaml", "test_acc", True, budget_s=45, max_epochs=None, seeds=(0, 1, 2),
        switches=(score_switch(), normalize_switch(),
                  # the learned table holds 40 s: longer than any utterance of the corpora in data/
                  sequence_positional(learned_max_len=4000),
                  Switch("window", (f"{BB}.window",),
                         {**{str(w): {f"{BB}.window": w} for w in (2, 4, 8, 16, 32)}, "full": {f"{BB}.window": None}}),
                  heads_switch()),
        overhead_s=10),
    Job("fashion_mnist", "configs/fashion_mnist_patches.yaml", "test_acc", True, budget_s=40, max_epochs=None, seeds=(0, 1, 2),
        switches=(score_switch(), normalize_switch(),
                  Switch("positional", (f"{ENC}.positional", f"{ENC}.max_h", f"{ENC}.max_w"), {
                      "none": {f"{ENC}.positional": "none"}, "sinusoidal 2-D": {f"{ENC}.positional": "sinusoidal"},
                      "learned 2-D": {f"{ENC}.positional": "learned", f"{ENC}.max_h": 7, f"{ENC}.max_w": 7}}),
                  heads_switch()),
        # a short budget: 6,000 training and 1,000 validation images (stratified), the full test set
        fixed={f"{DATA}.max_train": 6000, f"{DATA}.max_val": 1000}, overhead_s=16,
        note="6,000 training / 1,000 validation images (stratified subsets), the official 10,000 test images"),
    Job("freesolv", "configs/freesolv.yaml", "test_rmse", False, budget_s=30, max_epochs=None, seeds=(0, 1, 2),
        switches=(score_switch(), normalize_switch(),
                  Switch("positional", (f"{ENC}.lap_pe_k", f"{DATA}.features.lap_pe_k"), {
                      "none": {f"{ENC}.lap_pe_k": 0},
                      "Laplacian (8)": {f"{ENC}.lap_pe_k": 8, f"{DATA}.features.lap_pe_k": 8}}),
                  Switch("graph attention", (f"{ENC}.attention",), {
                      "all pairs + distance bias": {f"{ENC}.attention": "all_pairs"},
                      "neighbours": {f"{ENC}.attention": "neighbours"},
                      "none (plain set)": {f"{ENC}.attention": "none"}}),
                  heads_switch(also=(f"{ENC}.heads",))),
        seed_keys=("seed_everything", f"{DATA}.split.seed"), overhead_s=7,
        note="repetition s: random split s (default_rng(s), 80/10/10) and seed s"),
    Job("speech_lengths", "configs/speech_frames.yaml", "test_acc", True, budget_s=45, max_epochs=None, seeds=(0, 1, 2),
        switches=(sequence_positional(learned_max_len=SPEECH_CROP),),
        fixed={f"{DATA}.splits.fit_max_frames": SPEECH_CROP}, overhead_s=12,
        lengths=("frames", (200, 300, 400, 600)), expected_errors={"learned": LEARNED_TABLE_ERROR},
        note=f"trained and validated on utterances cut to their first {SPEECH_CROP} frames (2 s), tested on full lengths"),
    Job("g2p_lengths", "configs/g2p.yaml", "test_wer", False, budget_s=80, max_epochs=None, seeds=(0, 1),
        switches=(sequence_positional(learned_max_len=G2P_SHORT, relative=8),),
        fixed={f"{DATA}.fit_max_letters": G2P_SHORT}, overhead_s=30,
        lengths=("letters", (6, 8, 10, 12)), expected_errors={"learned": LEARNED_TABLE_ERROR},
        note=f"trained and validated on words of at most {G2P_SHORT} letters, tested on every word"),
]}

# --quick: every job end to end on tiny data in minutes; its numbers mean nothing
QUICK_FIXED = {
    "speech_frames": {f"{DATA}.splits.max_utterances": 4},
    "fashion_mnist": {f"{DATA}.max_train": 256, f"{DATA}.max_val": 64, f"{DATA}.max_test": 128},
    "freesolv": {},
    "speech_lengths": {f"{DATA}.splits.max_utterances": 4, f"{DATA}.splits.fit_max_frames": 100},
    "g2p_lengths": {f"{DATA}.max_words": 1500},
}
QUICK_VALUES = {"speech_frames": {"window": ["8", "full"]}, "fashion_mnist": {"score": ["scaled_dot", "dot"]},
                "freesolv": {"graph attention": ["all pairs + distance bias", "neighbours"]},
                "speech_lengths": {"positional": ["none", "learned"]},
                "g2p_lengths": {"positional": ["sinusoidal", "learned"]}}


def quick_plan() -> dict[str, Job]:
    jobs = {}
    for name, job in PLAN.items():
        keep = QUICK_VALUES[name]
        switches = tuple(Switch(s.name, s.keys, {v: o for v, o in s.values.items() if v in keep[s.name]})
                         for s in job.switches if s.name in keep)
        jobs[name] = replace(job, switches=switches, budget_s=15, max_epochs=1,
                             seeds=(0, 1) if name == "speech_frames" else (0,),
                             fixed={**job.fixed, **QUICK_FIXED[name]}, overhead_s=20)
    return jobs


# -- configs: dotted keys, merging, diffing -------------------------------------------------------
def get_key(cfg: dict, dotted: str) -> Any:
    """``cfg[a][b][c]`` for ``"a.b.c"``; a key the config leaves out is its class's default (the
    ``class_path`` node above it), else ``MISSING``."""
    node: Any = cfg
    parts = dotted.split(".")
    for i, p in enumerate(parts):
        if isinstance(node, dict) and p in node:
            node = node[p]
            continue
        return class_default(cfg, parts, i)
    return node


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


def class_default(cfg: dict, parts: list[str], missing_at: int) -> Any:
    """The constructor default of ``a.b.init_args.name`` when the config leaves out ``init_args``
    or ``name`` (``parts[missing_at]``) under the ``class_path`` node ``a.b``; else ``MISSING``."""
    if len(parts) < 2 or parts[-2] != "init_args" or missing_at < len(parts) - 2:
        return MISSING
    node: Any = cfg
    for p in parts[:-2]:
        node = node[p]
    if not (isinstance(node, dict) and "class_path" in node):
        return MISSING
    module, _, name = node["class_path"].rpartition(".")
    param = inspect.signature(getattr(importlib.import_module(module), name)).parameters.get(parts[-1])
    return MISSING if param is None or param.default is inspect.Parameter.empty else param.default


def set_key(cfg: dict, dotted: str, value: Any) -> None:
    """``cfg[a][b][c] = value`` for ``"a.b.c"`` (missing levels are created)."""
    *parents, last = dotted.split(".")
    node = cfg
    for p in parents:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ValueError(f"config key {dotted!r}: {p!r} is not a mapping")
    node[last] = value


def leaves(cfg: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf of a nested config as dotted key -> value (lists are leaves)."""
    if isinstance(cfg, dict) and cfg:
        out = {}
        for k, v in cfg.items():
            out.update(leaves(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: cfg}


def changed_keys(a: dict, b: dict) -> set[str]:
    """Dotted keys whose values differ between two configs; a key one of them leaves out counts
    with its class's default there (``get_key``)."""
    keys = leaves(a).keys() | leaves(b).keys()
    return {k for k in keys if get_key(a, k) != get_key(b, k)}


def merged(cfg: dict, overrides: dict[str, Any]) -> dict:
    """``cfg`` with the overrides set; one that sets a left-out key to its default is not written,
    so that a config means one thing whichever way it was reached."""
    out = copy.deepcopy(cfg)
    for k, v in overrides.items():
        if get_key(out, k) == v and not _present(out, k):
            continue
        set_key(out, k, v)
    return out


def _present(cfg: dict, dotted: str) -> bool:
    node: Any = cfg
    for p in dotted.split("."):
        if not (isinstance(node, dict) and p in node):
            return False
        node = node[p]
    return True


def base_config(job: Job) -> dict:
    """The job's config with its fixed overrides, the budget and the epochs (the config's own
    while they are not sized yet)."""
    cfg = yaml.safe_load((ROOT / job.config).read_text())
    secs = job.budget_s
    epochs = job.max_epochs if job.max_epochs is not None else cfg["trainer"].get("max_epochs")
    return merged(cfg, {**job.fixed, "trainer.max_epochs": epochs,
                        "trainer.max_time": f"00:{secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}",
                        "trainer.enable_progress_bar": False})


def value_key(switch: str, value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{switch}={value}")


@dataclass(frozen=True)
class Variant:
    """One trained configuration: the switch values it stands for (several when they give the
    same config: the base of every switch), its config (seed not yet set) and its file key."""

    key: str
    labels: tuple[tuple[str, str], ...]  # (switch, value) pairs this config is
    config: dict = field(compare=False, hash=False)


def variants(job: Job) -> list[Variant]:
    """The job's distinct configs: the base first (every switch's value that changes nothing),
    then one per switch value that changes something. A value that changes a key outside its
    switch's ``keys`` is a plan error."""
    base = base_config(job)
    out: dict[str, tuple[list, dict]] = {"base": ([], base)}
    by_config: dict[str, str] = {json.dumps(base, sort_keys=True, default=str): "base"}
    for s in job.switches:
        for value, overrides in s.values.items():
            outside = set(overrides) - set(s.keys)
            if outside:
                raise ValueError(f"{job.name}: switch {s.name!r} value {value!r} changes {sorted(outside)}, "
                                 f"not among its keys {list(s.keys)}")
            cfg = merged(base, overrides)
            sig = json.dumps(cfg, sort_keys=True, default=str)
            key = by_config.setdefault(sig, value_key(s.name, value))
            if key not in out:
                out[key] = ([], cfg)
            out[key][0].append((s.name, value))
    return [Variant(k, tuple(labels), cfg) for k, (labels, cfg) in out.items() if labels]


def seeded(job: Job, cfg: dict, seed: int) -> dict:
    return merged(cfg, {k: seed for k in job.seed_keys})


# -- rejected combinations ---------------------------------------------------------------------
def instantiate(node: Any) -> Any:
    """Build ``class_path`` / ``init_args`` nodes (nested ones first), as LightningCLI does."""
    if isinstance(node, list):
        return [instantiate(n) for n in node]
    if isinstance(node, dict) and "class_path" in node:
        module, _, name = node["class_path"].rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        return cls(**{k: instantiate(v) for k, v in (node.get("init_args") or {}).items()})
    if isinstance(node, dict):
        return {k: instantiate(v) for k, v in node.items()}
    return node


def rejection(cfg: dict) -> str | None:
    """The reason the model or the data module of ``cfg`` is rejected at construction (a
    constructor's ValueError), or None when both build. Any other exception here is not a
    rejection: the run itself is left to say what is wrong (an ``error`` row with its log)."""
    from vecset.pipelines.config_links import filled

    cfg = filled(cfg)  # the linked widths and counts, as the CLI fills them
    try:
        instantiate(cfg["model"])
        instantiate(cfg["data"])
    except ValueError as e:
        return str(e)
    except Exception as e:  # noqa: BLE001 (reported by the run instead)
        print(f"building the config here raised {type(e).__name__}: {e}; the run will tell", flush=True)
    return None


# -- one run -----------------------------------------------------------------------------------
def classify(job: Job, labels: tuple[tuple[str, str], ...], fit: dict) -> tuple[str, str | None]:
    """(status, detail) of a finished child: ``ok``; ``failed as expected`` when the run of a
    value in ``expected_errors`` failed with that text; ``error`` for any other failure;
    ``unexpected: no error`` when such a run succeeded."""
    expected = [job.expected_errors[v] for _, v in labels if v in job.expected_errors]
    if fit["returncode"]:
        err = fit["error"] or ""
        if expected and any(e in err for e in expected):
            return "failed as expected", err
        return "error", err
    if expected:
        return "unexpected: no error", f"expected the run to fail with {expected[0]!r}"
    return "ok", None


def length_buckets(run_dir: Path, length: str, edges: tuple[int, ...]) -> dict:
    """``bench/length_buckets.py`` on a finished run, in a fresh process."""
    cmd = [sys.executable, str(ROOT / "bench" / "length_buckets.py"), str(run_dir), "--length", length,
           "--edges", *map(str, edges)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_one(job: Job, variant: Variant, seed: int, out_dir: Path) -> dict:
    """Train one (variant, seed) in a fresh process (or record its rejection) and return its record."""
    cfg = seeded(job, variant.config, seed)
    record: dict[str, Any] = {"job": job.name, "key": variant.key, "seed": seed,
                              "labels": [list(lv) for lv in variant.labels]}
    reason = rejection(cfg)
    if reason is not None:
        return {**record, "status": "rejected", "detail": reason}
    name = f"abl_{job.name}_{variant.key}_s{seed}"
    cfg_path = CONFIGS / f"{name}.yaml"
    cfg_path.parent.mkdir(parents=True, exist_ok=True)
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    fit = run_fit(shown(cfg_path), ["--plots", "false"], log=out_dir / "logs" / f"{name}.log")
    status, detail = classify(job, variant.labels, fit)
    record.update({"status": status, "detail": detail, "config": shown(cfg_path),
                   "cpu_seconds": fit["cpu_seconds"], "process_seconds": fit["process_seconds"]})
    if fit["run_dir"] is not None:
        res = json.loads((fit["run_dir"] / "results.json").read_text())
        record.update({"run_dir": str(Path(fit["run_dir"]).relative_to(ROOT)), "test": res["test"],
                       "best_val": res["best_val"], "epochs": res["epochs"], "steps": res["global_steps"],
                       "train_seconds": res["wall_seconds"]})
        if job.lengths is not None:
            record["lengths"] = buckets = length_buckets(fit["run_dir"], *job.lengths)
            # all buckets together must give the run's own test metric back
            name = job.metric.removeprefix("test_")
            buckets["all_matches_test"] = abs(buckets["all"][name] - res["test"][job.metric]) < 1e-5
    return record


# -- aggregation -------------------------------------------------------------------------------
def mean_std(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (n - 1; None for one value)."""
    if not values:
        return None, None
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else None


def status_of(records: list[dict]) -> str:
    """``ok`` when every seed ran; else the first non-ok status with its detail."""
    for r in records:
        if r["status"] != "ok":
            detail = (r.get("detail") or "").splitlines()
            return f"{r['status']}: {detail[0][:240]}" if detail else r["status"]
    return "ok"


def aggregate(job: Job, records: list[dict]) -> list[dict]:
    """One row per (switch, value) with the metric's mean +- std over the seeds that ran; a
    length job adds one row per (value, length bucket)."""
    by_label: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        for s, v in r["labels"]:
            by_label.setdefault((s, v), []).append(r)
    # the base run of each seed: a variant's paired difference is taken against the same seed
    # (for FreeSolv the same split), which removes the seed-to-seed spread both share
    base_of_seed = {r["seed"]: r["test"][job.metric] for r in records if r["key"] == "base" and r["status"] == "ok"}
    rows = []
    for s in job.switches:
        base_value = next((v for v, o in s.values.items() if by_label.get((s.name, v))
                           and by_label[(s.name, v)][0]["key"] == "base"), None)
        for value in s.values:
            recs = sorted(by_label.get((s.name, value), []), key=lambda r: r["seed"])
            ok = [r for r in recs if r["status"] == "ok"]
            m, sd = mean_std([r["test"][job.metric] for r in ok])
            dm, dsd = mean_std([r["test"][job.metric] - base_of_seed[r["seed"]] for r in ok if r["seed"] in base_of_seed])
            row = {"switch": s.name, "value": value,
                   **({"bucket": "all", "items": next((r["lengths"]["all"]["items"] for r in recs if "lengths" in r),
                                                      None)} if job.lengths is not None else {}),
                   "base": value == base_value, "seeds": len(ok), f"{job.metric}_mean": m, f"{job.metric}_std": sd,
                   "diff_vs_base_mean": dm, "diff_vs_base_std": dsd,
                   "steps_mean": mean_std([r["steps"] for r in ok])[0],
                   "train_s_mean": mean_std([r["train_seconds"] for r in ok])[0],
                   "status": status_of(recs) if recs else "not run"}
            rows.append(row)
            if job.lengths is None:
                continue
            for bucket in _buckets(recs):
                vals = [b[_bucket_metric(job)] for r in recs if "lengths" in r
                        for b in r["lengths"]["buckets"] if b["bucket"] == bucket]
                items = {b["items"] for r in recs if "lengths" in r for b in r["lengths"]["buckets"] if b["bucket"] == bucket}
                bm, bsd = mean_std(vals)
                rows.append({"switch": s.name, "value": value, "bucket": bucket, "items": max(items),
                             "base": row["base"], "seeds": len(vals), f"{job.metric}_mean": bm,
                             f"{job.metric}_std": bsd, "diff_vs_base_mean": None, "diff_vs_base_std": None,
                             "steps_mean": None, "train_s_mean": None,
                             "status": row["status"]})
    return rows


def _bucket_metric(job: Job) -> str:
    return job.metric.removeprefix("test_")


def _buckets(recs: list[dict]) -> list[str]:
    out: list[str] = []
    for r in recs:
        for b in r.get("lengths", {}).get("buckets", []):
            if b["bucket"] not in out:
                out.append(b["bucket"])
    return out


# -- figures -----------------------------------------------------------------------------------
def figure(job: Job, rows: list[dict], path: Path) -> Path:
    """The metric per switch value (mean, error bar = std over seeds), one panel per switch; a
    length job: the metric per length bucket, one line per positional encoding."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = f"{job.metric}_mean"
    label = job.metric + (" (higher is better)" if job.higher_is_better else " (lower is better)")
    if job.lengths is not None:
        fig, ax = plt.subplots(figsize=(6.5, 4))
        for s in job.switches:
            for value in s.values:
                pts = [r for r in rows if r["switch"] == s.name and r["value"] == value
                       and r["bucket"] != "all" and r[metric] is not None]
                head = next(r for r in rows if r["switch"] == s.name and r["value"] == value and r["bucket"] == "all")
                if not pts:
                    ax.plot([], [], ls="none", label=f"{value}: {head['status'][:60]}")
                    continue
                ax.errorbar([p["bucket"] for p in pts], [p[metric] for p in pts],
                            yerr=[p[f"{job.metric}_std"] or 0 for p in pts], marker="o", capsize=3, label=value)
        ax.set_xlabel(f"test input length ({job.lengths[0]}); trained up to {job.lengths[1][0]}")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    else:
        n = len(job.switches)
        fig, axes = plt.subplots(1, n, figsize=(max(6.0, 3.2 * n), 3.8), sharey=True, squeeze=False)
        for ax, s in zip(axes[0], job.switches, strict=True):
            pts = [r for r in rows if r["switch"] == s.name]
            xs = list(range(len(pts)))
            for x, p in zip(xs, pts, strict=True):
                if p[metric] is None:
                    ax.annotate(p["status"].split(":")[0], (x, 0.5), xycoords=("data", "axes fraction"),
                                rotation=90, ha="center", va="center", fontsize=7, color="grey")
                    continue
                ax.errorbar([x], [p[metric]], yerr=[p[f"{job.metric}_std"] or 0], marker="o", capsize=3,
                            color="C3" if p["base"] else "C0")
            ax.set_xticks(xs, [p["value"] for p in pts], rotation=45, ha="right", fontsize=7)
            ax.set_xlim(-0.5, len(xs) - 0.5)
            ax.set_title(s.name, fontsize=9)
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel(label)
    what = "by test length, per positional encoding" if job.lengths else "one switch at a time (red: the config's own)"
    fig.suptitle(f"{job.name}: {what}; mean +- std over {len(job.seeds)} seed(s)", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# -- the study ---------------------------------------------------------------------------------
def size_epochs(job: Job, runs_dir: Path) -> Job:
    """The job with ``max_epochs`` set: given in the plan, read from ``epochs.json`` (an earlier
    start of this study), or measured now: the epochs the base config completes within the
    budget (``max_time``) on this machine, trained once with an unbounded ``max_epochs`` (at
    least 1). The base run's schedule then just fits the budget; Lightning's own time per epoch
    (validation, checkpoints, logging) is in it, which a step timing misses (FreeSolv, 2 loaded
    cores: 0.4 s of steps against 2.1 s of wall time per epoch)."""
    if job.max_epochs is not None:
        return job
    path = runs_dir / job.name / "epochs.json"
    if not path.exists():
        cfg = merged(seeded(job, base_config(job), job.seeds[0]), {"trainer.max_epochs": 100000})
        cfg_path = CONFIGS / f"abl_{job.name}_epochs.yaml"
        cfg_path.parent.mkdir(parents=True, exist_ok=True)
        cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        fit = run_fit(shown(cfg_path), ["--plots", "false"],
                      log=runs_dir.parent / "logs" / f"abl_{job.name}_epochs.log")
        if fit["returncode"]:
            raise SystemExit(f"{job.name}: measuring the epochs in the budget failed: {fit['error']}")
        res = json.loads((fit["run_dir"] / "results.json").read_text())
        epochs = max(1, int(res["epochs"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"max_epochs": epochs, "budget_s": job.budget_s, "steps": res["global_steps"],
                                    "train_seconds": res["wall_seconds"], "run_dir": str(fit["run_dir"]),
                                    "load_average": os.getloadavg()}, indent=2))
        print(f"{job.name}: max_epochs {epochs} (the base config completed {res['epochs']} epochs, "
              f"{res['global_steps']} steps, in its {job.budget_s} s budget)", flush=True)
    return replace(job, max_epochs=json.loads(path.read_text())["max_epochs"])


def record_path(runs_dir: Path, job: Job, variant: Variant, seed: int) -> Path:
    return runs_dir / job.name / f"{variant.key}_s{seed}.json"


def plan_table(jobs: dict[str, Job], runs_dir: Path) -> tuple[str, float, float]:
    """The plan as a table, its total estimated seconds and the seconds still to run."""
    rows, total, left = [], 0.0, 0.0
    for job in jobs.values():
        if job.max_epochs is None:  # the run that measures the epochs in the budget
            measured = (runs_dir / job.name / "epochs.json").exists()
            total += job.budget_s + job.overhead_s
            left += 0 if measured else job.budget_s + job.overhead_s
            rows.append({"job": job.name, "run": "(epochs in the budget)", "values": "base, max_epochs open",
                         "seeds": 1, "budget_s": job.budget_s, "done": int(measured)})
        for v in variants(job):
            done = sum(record_path(runs_dir, job, v, s).exists() for s in job.seeds)
            secs = len(job.seeds) * (job.budget_s + job.overhead_s)
            total += secs
            left += secs * (len(job.seeds) - done) / len(job.seeds)
            rows.append({"job": job.name, "run": v.key, "values": "; ".join(f"{s}={x}" for s, x in v.labels),
                         "seeds": len(job.seeds), "budget_s": job.budget_s, "done": done})
    return table(rows, ["job", "run", "values", "seeds", "budget_s", "done"]), total, left


def write_job(job: Job, runs_dir: Path, out_dir: Path, quick: bool) -> Path:
    """Rows from the job's records, its JSON and its figure; the JSON's command is the study's
    (``--report`` only rebuilds from the records). A length job's rows that its records cannot
    give (records recovered from an earlier JSON: ``keep_length_rows``) come from the job's
    JSON as it was, and the JSON says which."""
    records = [json.loads(p.read_text()) for p in sorted((runs_dir / job.name).glob("*.json"))
               if p.name != "epochs.json"]  # the job's measured max_epochs, not a run
    rows = aggregate(job, records)
    path = out_dir / f"{job.name}.json"
    kept: list[str] = []
    if job.lengths is not None and path.exists():
        rows, kept = keep_length_rows(job, rows, records, json.loads(path.read_text())["rows"])
    fig = figure(job, rows, out_dir / f"{job.name}.png")
    payload = {"machine": machine(), "command": "python " + " ".join(a for a in sys.argv if a != "--report"), "job": job.name,
               "config": job.config, "metric": job.metric, "higher_is_better": job.higher_is_better,
               "budget_s": job.budget_s, "max_epochs": job.max_epochs, "seeds": len(job.seeds), "quick": quick,
               "data": job.note or "the config's own data", "fixed_overrides": job.fixed,
               "figure": str(fig.relative_to(ROOT)), "rows": rows,
               **({"rows_kept_from_the_previous_json": kept} if kept else {}),
               "runs": [{k: r.get(k) for k in RUN_FIELDS} for r in records]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=str))
    return path


# -- records recovered from the job JSONs (issue #27) ---------------------------------------------
# The study's per-run records were never committed (``runs/`` in .gitignore matched their folder
# too); each job's JSON keeps these fields of every record (``runs``) and its rows.
RUN_FIELDS = ("key", "seed", "status", "test", "steps", "train_seconds", "process_seconds", "run_dir", "detail")
REJECTED_FIELDS = ("key", "seed", "status", "detail")  # a rejected run's record holds no more (run_one)


def recover_records(job: Job, job_json: Path, runs_dir: Path) -> list[Path]:
    """Write the job's missing run records and its ``epochs.json`` from its JSON (``runs``,
    ``max_epochs``): each record has what the JSON kept, its variant's ``labels`` from the plan,
    ``recovered_from`` (the JSON) and ``not_recovered`` (the record's fields the JSON did not
    keep: ``config``, ``cpu_seconds``, ``best_val``, ``epochs``, and a length job's ``lengths``,
    its per-length buckets). A record that exists is left alone. Returns the files written."""
    payload = json.loads(job_json.read_text())
    source = str(job_json.relative_to(ROOT)) if job_json.is_relative_to(ROOT) else str(job_json)
    if payload["job"] != job.name or payload["budget_s"] != job.budget_s:
        raise ValueError(f"{source}: job {payload['job']!r} with a {payload['budget_s']} s budget, but the plan's "
                         f"job {job.name!r} has {job.budget_s} s")
    if job.max_epochs is not None and payload["max_epochs"] != job.max_epochs:
        raise ValueError(f"{source}: max_epochs {payload['max_epochs']}, the plan's job {job.max_epochs}")
    labels = {v.key: [list(lv) for lv in v.labels] for v in variants(replace(job, max_epochs=payload["max_epochs"]))}
    written = []
    epochs = runs_dir / job.name / "epochs.json"
    if job.max_epochs is None and not epochs.exists():
        epochs.parent.mkdir(parents=True, exist_ok=True)
        epochs.write_text(json.dumps({"max_epochs": payload["max_epochs"], "budget_s": payload["budget_s"],
                                      "recovered_from": source,
                                      "not_recovered": ["steps", "train_seconds", "run_dir", "load_average"]}, indent=2))
        written.append(epochs)
    lost = ["config", "cpu_seconds", "best_val", "epochs"] + (["lengths"] if job.lengths is not None else [])
    for run in payload["runs"]:
        if run["key"] not in labels:
            raise ValueError(f"{source}: run {run['key']!r} is not a variant of the plan's job {job.name!r} "
                             f"(its variants: {sorted(labels)})")
        path = record_path(runs_dir, job, Variant(run["key"], (), {}), run["seed"])
        if path.exists():
            continue
        rejected = run["status"] == "rejected"
        rec = {"job": job.name, "key": run["key"], "seed": run["seed"], "labels": labels[run["key"]],
               **{k: run[k] for k in (REJECTED_FIELDS if rejected else RUN_FIELDS) if k not in ("key", "seed")},
               "recovered_from": source, "not_recovered": [] if rejected else lost}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec, indent=2, default=str))
        written.append(path)
    return written


def keep_length_rows(job: Job, rows: list[dict], records: list[dict], previous: list[dict]) -> tuple[list[dict], list[str]]:
    """A length job's rows with what its recovered records cannot give taken from ``previous``
    (the rows of the job's JSON as it was): for a value whose ran records carry no ``lengths``,
    the item count of its ``all`` row and its per-bucket rows. Returns the rows and a note per
    value so kept; a value that ``previous`` has no rows for stays as it is."""
    if job.lengths is None:
        return rows, []
    lacking = {(s, v) for r in records if r.get("test") is not None and "lengths" not in r for s, v in r["labels"]}
    out, kept = [], []
    for row in rows:
        key = (row["switch"], row["value"])
        old = [p for p in previous if (p["switch"], p["value"]) == key]
        if row["bucket"] != "all" or key not in lacking or not old:
            out.append(row)
            continue
        old_all = next((p for p in old if p["bucket"] == "all"), {})
        out.append({**row, "items": old_all.get("items")})
        out += [p for p in old if p["bucket"] != "all"]
        kept.append(f"{row['switch']}={row['value']}: the item count and the per-length rows (the records, "
                    f"recovered from the job's JSON, hold no per-length buckets)")
    return out, kept


def run_job(job: Job, runs_dir: Path, out_dir: Path, retry_errors: bool = False, t_start: float | None = None) -> int:
    """Every (variant, seed) of the job whose record is missing (or says error, with
    ``retry_errors``), one after another; returns how many ran."""
    t_start = time.time() if t_start is None else t_start
    ran = 0
    for v in variants(job):
        for seed in job.seeds:
            path = record_path(runs_dir, job, v, seed)
            if path.exists() and not (retry_errors and json.loads(path.read_text())["status"] == "error"):
                continue
            t0 = time.time()
            rec = run_one(job, v, seed, out_dir)
            ran += 1
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(rec, indent=2, default=str))
            metric = rec.get("test", {}).get(job.metric)
            print(f"[{(time.time() - t_start) / 60:.1f} min] {job.name} {v.key} seed {seed}: {rec['status']}"
                  + (f", {job.metric} {metric:.4f}" if metric is not None else "")
                  + (f" ({rec['detail'][:160]})" if rec.get("detail") else "")
                  + f" in {time.time() - t0:.0f} s", flush=True)
    return ran


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", nargs="+", choices=list(PLAN), default=list(PLAN))
    ap.add_argument("--plan", action="store_true", help="print the plan and its estimated time, run nothing")
    ap.add_argument("--quick", action="store_true", help="a smoke run on tiny data (bench/results/tmp/ablations/)")
    ap.add_argument("--report", action="store_true", help="no training: rows, figures and BENCHMARKS.md from the records")
    ap.add_argument("--retry-errors", action="store_true", help="rerun runs whose record says error")
    ap.add_argument("--recover-records", action="store_true",
                    help="write the missing run records from the job JSONs (recover_records), run nothing")
    args = ap.parse_args()
    jobs = {n: j for n, j in (quick_plan() if args.quick else PLAN).items() if n in args.jobs}
    out_dir = RESULTS / "tmp" / "ablations" if args.quick else RESULTS / "ablations"
    runs_dir = out_dir / "runs"
    if args.recover_records:
        for job in jobs.values():
            written = recover_records(job, out_dir / f"{job.name}.json", runs_dir)
            print(f"{job.name}: {len(written)} files written under {runs_dir.relative_to(ROOT) / job.name}")
        return

    text, total, left = plan_table(jobs, runs_dir)
    print(text)
    print(f"estimated time: {total / 3600:.2f} h in all, {left / 3600:.2f} h still to run "
          f"(budgets plus an estimated overhead per run; {os.cpu_count()} CPU cores here)", flush=True)
    if args.plan:
        return
    t_start = time.time()
    for job in jobs.values():
        if not args.report or (runs_dir / job.name / "epochs.json").exists():
            job = size_epochs(job, runs_dir)
        if not args.report:
            run_job(job, runs_dir, out_dir, args.retry_errors, t_start)
        path = write_job(job, runs_dir, out_dir, args.quick)
        rows = json.loads(path.read_text())["rows"]
        cols = [c for c in (rows[0] if rows else {}) if c != "train_s_mean"]
        print(f"\n{job.name} ({job.metric}):\n" + table(rows, cols))
        print(f"wrote {path}", flush=True)
    if not args.quick:
        subprocess.run([sys.executable, str(ROOT / "bench" / "report.py")], check=True)


if __name__ == "__main__":
    main()
