"""Speech frame labeling: truncated self-attention vs the context-window MLP vs a BiLSTM.

The three configs (configs/speech_frames{,_mlp,_bilstm}.yaml) train one after another through
``vecset fit`` on the same speaker-disjoint split with the same epochs; each run's best
checkpoint is tested, and its test frame accuracy and training wall seconds (fit only, measured
by the CLI) go into one table and a JSON file (``--out``).

Usage:
    python bench/speech_baselines.py                         # shipped sample, data/speech
    # the full corpus at 20 minutes each: one model at a time (rows keep their own epochs and
    # join the saved table of the same corpus); 22 / 13 / 37 epochs fill 20 min on 2 idle cores
    python bench/speech_baselines.py --root data/speech_full --epochs 22 --only configs/speech_frames.yaml \
        --out bench/results/speech_baselines_full_wordnet.json -- --trainer.max_time 00:00:20:00
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from vecset.pipelines.speech.options import SpeechSplits

CONFIGS = {
    "self-attention": "configs/speech_frames.yaml",
    "window MLP (k=5, 11 frames)": "configs/speech_frames_mlp.yaml",
    "BiLSTM (2 layers)": "configs/speech_frames_bilstm.yaml",
}


# the per-phone report's fields that join each row (report key, dotted into its nested parts -> row key)
REPORT = {"frame_accuracy_silences_merged": "test_frame_accuracy_silences_merged", "frames": "test_frames",
          "frame_accuracy_at_boundaries": "test_accuracy_at_boundaries",
          "frame_accuracy_inside_phones": "test_accuracy_inside_phones",
          "share_of_errors_at_boundaries": "share_of_errors_at_boundaries",
          # segments (39 classes, silences dropped; boundaries within 20 ms): pipelines/speech/segment_scores.py
          "segment_decoder": "segment_decoder",
          "segments.reference_phones": "test_reference_phones",
          "segments.argmax.phones": "test_phones_argmax", "segments.decoder.phones": "test_phones_decoder",
          "segments.argmax.per": "test_segment_per_argmax", "segments.decoder.per": "test_segment_per_decoder",
          "segments.argmax.boundary_f1": "test_boundary_f1_argmax",
          "segments.decoder.boundary_precision": "test_boundary_precision_decoder",
          "segments.decoder.boundary_recall": "test_boundary_recall_decoder",
          "segments.decoder.boundary_f1": "test_boundary_f1_decoder",
          "segments.decoder.frame_accuracy": "test_frame_accuracy_decoder",
          # words unseen in training: pipelines/speech/word_scores.py
          "words.share_unseen_word_tokens": "test_share_unseen_word_tokens",
          "words.frame_accuracy_unseen_words": "test_accuracy_unseen_words",
          "words.frame_accuracy_seen_words": "test_accuracy_seen_words",
          "words.frame_accuracy_outside_words": "test_accuracy_outside_words"}
MISSING = object()


def lookup(report: dict, key: str):
    """``report``'s value at a dotted key (MISSING where a part is absent; None where the report
    has the part as null: e.g. no decoder, no .wrd files)."""
    for part in key.split("."):
        if report is None:
            return None
        if part not in report:
            return MISSING
        report = report[part]
    return report

# the configs' segment decoder, for rescoring a checkpoint whose config has none
RESCORE_DECODER = {"switch_penalty": 3.0, "min_duration": 3}


def report_fields(checkpoint: str, root: str, max_utts: int, run_dir: Path) -> dict:
    """The REPORT fields of a run, rescored from its checkpoint if its report predates one."""
    per_phone = json.loads((run_dir / "test_per_phone.json").read_text())
    if any(lookup(per_phone, k) is MISSING for k in REPORT):
        per_phone = rescore(checkpoint, root, max_utts, run_dir)
    return {row_key: None if (v := lookup(per_phone, k)) is MISSING else v for k, row_key in REPORT.items()}


def run(config: str, root: str, epochs: int, max_utts: int, extra: list[str]) -> dict:
    cmd = [sys.executable, "-m", "vecset", "fit", "--config", config, "--data.root", root,
           "--trainer.max_epochs", str(epochs), "--data.splits.max_utterances", str(max_utts), *extra]
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    t0 = time.time()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res.stderr[-3000:]}")
    line = next(ln for ln in reversed(res.stdout.splitlines()) if ln.startswith("results: "))
    results = json.loads(Path(line.split(": ", 1)[1]).read_text())
    run_dir = Path(results["config"]).parent
    return {"config": config, "command": " ".join(cmd), "test_frame_accuracy": results["test"]["test_acc"],
            "best_val_accuracy": results["best_val"], "train_seconds": results["wall_seconds"],
            "epochs": results["epochs"], "total_seconds": round(time.time() - t0, 1),
            **report_fields(results["checkpoint"], root, max_utts, run_dir), "run_dir": str(run_dir)}


def rescore(checkpoint: str, root: str, max_utts: int, run_dir: Path) -> dict:
    """Rewrite a run's per-phone test report from its checkpoint."""
    from vecset.heads import SegmentDecoder
    from vecset.pipelines.reports.base import ReportContext
    from vecset.pipelines.speech.data import SpeechFramesDataModule
    from vecset.pipelines.speech.reports import PerPhoneReport
    from vecset.pipelines.training.task import TaskModule

    model = TaskModule.load_from_checkpoint(checkpoint, map_location="cpu")
    if getattr(model.head, "decoder", None) is None:
        # a run from before the configs had a segment decoder: theirs (configs/speech_frames*.yaml)
        model.head.decoder = SegmentDecoder(**RESCORE_DECODER)
        print(f"{checkpoint}: no segment decoder in its config; rescored with {model.head.decoder}")
    dm = SpeechFramesDataModule(root=root, splits=SpeechSplits(max_utterances=max_utts))
    dm.setup("test")
    (path,) = PerPhoneReport().write(ReportContext(model, dm, run_dir))
    return json.loads(path.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default="data/speech")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--max-utterances", type=int, default=0, help="per split; 0 = all")
    ap.add_argument("--only", nargs="*", default=None, help="config paths to run (default: all three)")
    ap.add_argument("--out", default="bench/results/speech_baselines.json")
    ap.add_argument("--note", default="wall seconds on a shared machine",
                    help="how the machine was loaded, stored with the table")
    ap.add_argument("extra", nargs="*", help="more CLI overrides, after --")
    ap.add_argument("--rescore", action="store_true",
                    help="no training: fill missing report fields of --out's runs from their checkpoints")
    a = ap.parse_args()
    rows, file_note = {}, a.note
    if a.rescore:
        saved = json.loads(Path(a.out).read_text())
        rows, file_note = saved["results"], saved.get("note", a.note)
        a.root = saved["corpus"]
        gone = []
        for name, r in rows.items():
            if any(k not in r for k in REPORT.values()):  # a table from before some fields existed
                rd = Path(r["run_dir"])
                res = json.loads((rd / "results.json").read_text()) if (rd / "results.json").exists() else {}
                if res.get("test", {}).get("test_acc") != r["test_frame_accuracy"]:
                    gone.append(name)  # the directory is gone, or now holds another run
                    continue
                r.update(report_fields(res["checkpoint"], a.root, a.max_utterances, rd))
        if gone:
            print(f"{len(gone)} rows not rescored: their run directories are gone or hold other runs now: {gone}")
    if a.only and Path(a.out).exists():
        # a partial rerun (one config, more epochs, or a variant given by overrides) joins the
        # saved table of the same corpus; each row keeps its own epochs
        saved = json.loads(Path(a.out).read_text())
        if saved["corpus"] == a.root:
            rows = saved["results"]
            # each new row keeps its own note (how loaded the machine was); the file's note
            # stays for the rows written before rows had one
            file_note = saved.get("note", a.note)
            for r in rows.values():
                r.setdefault("epochs", saved.get("epochs"))  # tables written before rows had it
    for name, cfg in ({} if a.rescore else CONFIGS).items():
        if a.only and cfg not in a.only:
            continue
        name += f", {a.epochs} epochs"
        if a.extra:
            name += " " + " ".join(a.extra)
        print(f"training {name} ({cfg}) ...", flush=True)
        rows[name] = {**run(cfg, a.root, a.epochs, a.max_utterances, a.extra), "note": a.note}
    print(f"\nspeech frame labeling on {a.root} (speaker-disjoint test split)")
    w = max([30, *(len(n) for n in rows)])
    print(f"{'model':{w}s} {'epochs':>6s} {'test frame acc':>14s} {'sil merged':>10s} {'best val acc':>12s} "
          f"{'train s':>8s} {'PER argmax':>10s} {'PER dec':>7s} {'bnd F1 dec':>10s} {'unseen wd':>9s} "
          f"{'acc unseen':>10s} {'acc seen':>8s}")
    num = lambda r, k, f: format(r[k], f) if r.get(k) is not None else "-"  # noqa: E731
    for name, r in rows.items():
        print(f"{name:{w}s} {r['epochs']:6d} {r['test_frame_accuracy']:14.4f} "
              f"{r.get('test_frame_accuracy_silences_merged', float('nan')):10.4f} "
              f"{r['best_val_accuracy']:12.4f} {r['train_seconds']:8.1f} {num(r, 'test_segment_per_argmax', '10.4f')} "
              f"{num(r, 'test_segment_per_decoder', '7.4f')} {num(r, 'test_boundary_f1_decoder', '10.4f')} "
              f"{num(r, 'test_share_unseen_word_tokens', '9.4f')} {num(r, 'test_accuracy_unseen_words', '10.4f')} "
              f"{num(r, 'test_accuracy_seen_words', '8.4f')}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"corpus": a.root, "machine": platform.platform(),
                               "cpus": os.cpu_count(), "note": file_note,
                               "results": rows}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
