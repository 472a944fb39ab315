"""Choose the segment decoder's settings on the validation (dev) split: segment PER and
phone-boundary F1 (20 ms) of a trained speech checkpoint for a grid of switch penalties and
minimum durations, beside argmax merging. Never reads the test split.

Usage:
    python bench/segment_decoder_sweep.py --ckpt runs/speech_frames/version_0/checkpoints/best.ckpt
        [--root data/speech] [--out bench/results/segment_decoder_sweep.json]

Prints the table, writes the JSON and ``<out stem>.png`` (PER and boundary F1 vs penalty, a
line per minimum duration) and names the setting with the lowest dev PER (ties: higher F1).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

from vecset.pipelines.speech.options import SpeechSplits

PENALTIES = [0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0]
DURATIONS = [1, 2, 3, 4]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--root", default="data/speech")
    ap.add_argument("--max-utterances", type=int, default=0)
    ap.add_argument("--out", default="bench/results/segment_decoder_sweep.json")
    ap.add_argument("--note", default="", help="how the machine was loaded")
    a = ap.parse_args()

    from vecset.heads import SegmentDecoder
    from vecset.pipelines.reports.outputs import collect_test_outputs
    from vecset.pipelines.speech.data import SpeechFramesDataModule
    from vecset.pipelines.speech.segment_scores import SegmentScores
    from vecset.pipelines.training.task import TaskModule

    model = TaskModule.load_from_checkpoint(a.ckpt, map_location="cpu")
    dm = SpeechFramesDataModule(root=a.root, splits=SpeechSplits(max_utterances=a.max_utterances))
    dm.setup("validate")
    items = {u.id: u for u in dm.sets["val"].items}
    utts = []  # (sample id, logits (T, C), true labels (T,))
    for o in collect_test_outputs(model, dm.val_dataloader(), keep_output=True):
        for i, sid in enumerate(o.batch["ids"].tolist()):
            n = int(o.batch["mask"][i].sum())
            utts.append((sid, o.output[i, :n], o.batch["y"][i, :n].numpy()))
    rows = []
    for D in DURATIONS:
        for pen in PENALTIES:
            dec = SegmentDecoder(pen, D)
            sc = SegmentScores(list(dm.class_names))
            for sid, logits, y in utts:
                preds = {"decoder": dec(logits)}
                if not rows:
                    preds["argmax"] = logits.argmax(-1).numpy()
                sc.update(items[sid].segments, items[sid].sample_rate, preds, y)
            res = sc.compute()
            if not rows:
                rows.append({"segments": "argmax", **res["argmax"]})
            rows.append({"segments": "decoder", "switch_penalty": pen, "min_duration": D, **res["decoder"]})
            ref = res["reference_phones"], res["reference_boundaries"]
    best = min(rows[1:], key=lambda r: (r["per"], -r["boundary_f1"]))
    print(f"dev split of {a.root}: {len(utts)} utterances, {ref[0]} reference phones, {ref[1]} boundaries")
    print(f"{'segments':>8s} {'penalty':>7s} {'min dur':>7s} {'phones':>6s} {'PER':>6s} {'P':>6s} {'R':>6s} "
          f"{'F1':>6s} {'frame acc':>9s}")
    for r in rows:
        print(f"{r['segments']:>8s} {r.get('switch_penalty', ''):>7} {r.get('min_duration', ''):>7} {r['phones']:6d} "
              f"{r['per']:6.4f} {r['boundary_precision']:6.3f} {r['boundary_recall']:6.3f} {r['boundary_f1']:6.3f} "
              f"{r['frame_accuracy']:9.4f}")
    print(f"lowest dev PER: switch_penalty {best['switch_penalty']}, min_duration {best['min_duration']} "
          f"(PER {best['per']:.4f}, boundary F1 {best['boundary_f1']:.3f})")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"checkpoint": str(Path(a.ckpt).resolve()), "corpus": a.root, "split": "val",
                               "utterances": len(utts), "reference_phones": ref[0], "reference_boundaries": ref[1],
                               "machine": platform.platform(), "cpus": os.cpu_count(), "note": a.note,
                               "chosen": {k: best[k] for k in ("switch_penalty", "min_duration")},
                               "rows": rows}, indent=2) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for D in DURATIONS:
        rs = [r for r in rows[1:] if r["min_duration"] == D]
        ax1.plot([r["switch_penalty"] for r in rs], [r["per"] for r in rs], marker="o", label=f"min duration {D}")
        ax2.plot([r["switch_penalty"] for r in rs], [r["boundary_f1"] for r in rs], marker="o", label=f"min duration {D}")
    for ax, key, name in ((ax1, "per", "segment PER (39, no silences)"), (ax2, "boundary_f1", "boundary F1 (20 ms)")):
        ax.axhline(rows[0][key], color="gray", ls="--", label="argmax merging")
        ax.set_xlabel("switch penalty (nats)")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    ax1.legend(fontsize=8)
    fig.suptitle(f"segment decoder on the dev split ({len(utts)} utterances of {a.root})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=90)
    print(f"wrote {out} and {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
