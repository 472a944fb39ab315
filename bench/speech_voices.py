"""Speech frame labeling across voices: leave-one-voice-out (LOVO), in-voice and voice-disjoint side by side.

A corpus built with ``scripts/make_speech_corpus.py --rotations`` holds, per voice family F,
``lovo/F/{train,dev,test,test_in_voice}.lst``: train and dev are the other families' train and
dev speakers, ``test`` is F's utterances but its dev speakers' (a voice the model never heard) and
``test_in_voice`` the other families' test speakers (voices it trained on, new speakers and
sentences). Each model config trains once per rotation (``vecset fit``, best checkpoint by dev
accuracy, tested on F); the same checkpoint is then tested on ``test_in_voice``. The table has,
per model, both frame accuracies per held-out family and their means over the rotations. F's dev
speakers are in no list of the table: they are the voice-disjoint dev set below.

``--lovo lovo_synth`` holds out a whole synthesizer instead (Festival's, espeak-ng's or flite's voices):
the voice-disjoint number for a synthesizer no training voice comes from.

``--choose-on F`` is the voice-disjoint dev split for choosing settings (augmentation): it trains
the rotation of F (best checkpoint by its in-voice dev) and scores it on F's dev speakers only
(``lovo/F/dev_unheard.lst``), never on a test list; the rows go to
``--out`` under ``choice``. Settings go after ``--`` as CLI overrides (``--data.augment.voice ...``).

Usage:
    python scripts/make_speech_corpus.py --out data/speech_voices --utterances 300 --speakers 20 \
        --voices kal,ked,slt,espeak:en-us,espeak:en-us+f3 --rotations --format flac
    python bench/speech_voices.py --root data/speech_voices --epochs 8 --note "$(cat /proc/loadavg)"
    python bench/speech_voices.py --choose-on slt --tag voice --epochs 5 --out bench/results/speech_voices_dev.json \
        -- --data.augment.voice '{vtlp: {p: 0.5}, pitch: {p: 0.3}}'
    python bench/speech_voices.py --plot-only --out bench/results/speech_voices.json   # the figure again

Beside ``--out`` it writes ``<out>.png``: per held-out family, each model's voice-disjoint
accuracy (bars) and in-voice accuracy (ticks), families from the hardest to the easiest.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import yaml

CONFIGS = {
    "self-attention": "configs/speech_frames.yaml",
    "window MLP": "configs/speech_frames_mlp.yaml",
    "BiLSTM": "configs/speech_frames_bilstm.yaml",
}


def fit(config: str, root: str, fam: str, epochs: int, extra: list[str], test: str = "test.lst",
        folder: str = "lovo") -> dict:
    lovo = f"{folder}/{fam}"
    cmd = [sys.executable, "-m", "vecset", "fit", "--config", config, "--data.root", root,
           "--data.splits.train", f"{lovo}/train.lst", "--data.splits.val", f"{lovo}/dev.lst", "--data.splits.test", f"{lovo}/{test}",
           "--trainer.max_epochs", str(epochs), "--trainer.enable_progress_bar", "false", *extra]
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res.stderr[-3000:]}")
    line = next(ln for ln in reversed(res.stdout.splitlines()) if ln.startswith("results: "))
    results = json.loads(Path(line.split(": ", 1)[1]).read_text())
    return {"command": shlex.join(cmd[1:]), "checkpoint": results["checkpoint"],
            "voice_disjoint_frame_accuracy": results["test"]["test_acc"], "best_val_accuracy": results["best_val"],
            "epochs": results["epochs"], "train_seconds": results["wall_seconds"]}


def test_on(config: str, checkpoint: str, root: str, test_list: str) -> float:
    """Test frame accuracy of a checkpoint on another list, with the config's data settings."""
    import pytorch_lightning as pl

    from vecset.pipelines.speech.data import SpeechFramesDataModule
    from vecset.pipelines.training.task import TaskModule

    args = dict(yaml.safe_load(Path(config).read_text())["data"]["init_args"])
    args.update(root=root, splits={**args.get("splits", {}), "test": test_list})
    dm = SpeechFramesDataModule(**args)
    model = TaskModule.load_from_checkpoint(checkpoint, map_location="cpu")
    trainer = pl.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False,
                         enable_checkpointing=False)
    (out,) = trainer.test(model, datamodule=dm, verbose=False)
    return float(out["test_acc"])


def unheard_dev(root: Path, fam: str, folder: str = "lovo") -> str:
    """``dev_unheard.lst``, the dev speakers of family ``fam``: a voice the rotation of ``fam``
    never trains on, and never in its test list; checked, and its name in ``<folder>/<fam>/`` returned."""
    lst = root / folder / fam / "dev_unheard.lst"
    if not lst.exists():
        raise SystemExit(f"{lst}: missing; family {fam!r} has no dev speaker, or the corpus was built before "
                         "dev_unheard.lst (and then its test.lst holds these speakers): rebuild it with "
                         "scripts/make_speech_corpus.py --rotations")
    return lst.name


def choose(a, root: Path) -> None:
    """Voice-disjoint dev rows: ``choice[<model> / <fam> / <tag>]`` in ``--out``."""
    out = Path(a.out)
    saved = json.loads(out.read_text()) if out.exists() else {"bench": "bench/speech_voices.py --choose-on",
                                                              "corpus": str(root), "choice": {}}
    test = unheard_dev(root, a.choose_on, a.lovo)
    for model in a.models:
        r = fit(CONFIGS[model], a.root, a.choose_on, a.epochs, a.extra, test=test, folder=a.lovo)
        r["voice_disjoint_dev_frame_accuracy"] = r.pop("voice_disjoint_frame_accuracy")
        r.update(model=model, family=a.choose_on, tag=a.tag, overrides=a.extra, loadavg_after=os.getloadavg(),
                 note=a.note)
        saved["choice"][f"{model} / {a.choose_on} / {a.tag}"] = r
        print(f"{model} / {a.choose_on} / {a.tag}: voice-disjoint dev {r['voice_disjoint_dev_frame_accuracy']:.3f}  "
              f"in-voice dev (best) {r['best_val_accuracy']:.3f}  ({r['train_seconds']:.0f} s)", flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(saved, indent=2) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default="data/speech_voices")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--models", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--families", nargs="*", default=None, help="held-out families (default: every folder of --lovo)")
    ap.add_argument("--lovo", default="lovo", choices=["lovo", "lovo_synth"],
                    help="lovo: one voice family out; lovo_synth: one synthesizer (festival, espeak, flite) out")
    ap.add_argument("--out", default="bench/results/speech_voices.json")
    ap.add_argument("--corpus-command", default=None,
                    help="the command that built --root, kept in the JSON (its corpus.json has the settings)")
    ap.add_argument("--note", default="", help="machine load (cat /proc/loadavg) and anything else to keep")
    ap.add_argument("--choose-on", default=None, metavar="FAMILY",
                    help="score on FAMILY's dev speakers only (voice-disjoint dev), for choosing settings")
    ap.add_argument("--tag", default="", help="the name of the settings in --choose-on rows")
    ap.add_argument("--plot-only", action="store_true", help="redraw <out>.png from --out's rows; train nothing")
    ap.add_argument("extra", nargs="*", help="more CLI overrides, after --")
    a = ap.parse_args()
    root = Path(a.root)
    if a.plot_only:
        out = Path(a.out)
        if not out.is_file():
            raise SystemExit(f"--out {out}: no such file (--plot-only draws an existing result)")
        saved = json.loads(out.read_text())
        if not saved.get("results"):
            raise SystemExit(f"{out}: no 'results' rows to draw (a --choose-on file has none)")
        print(f"wrote {plot(saved['results'], out.with_suffix('.png'), saved.get('held_out', 'lovo'))}")
        return
    if a.choose_on:
        return choose(a, root)
    fams = a.families or sorted(p.name for p in (root / a.lovo).iterdir() if p.is_dir())
    out = Path(a.out)
    saved = json.loads(out.read_text()) if out.exists() else {}
    rows = saved.get("results", {}) if saved.get("corpus") == str(root) else {}
    t0 = time.time()
    for fam in fams:  # families outer: a partial run has every model on the same rotations
        for model in a.models:
            key = f"{model} / {fam}"
            if key in rows and rows[key].get("epochs_requested") == a.epochs and rows[key].get("overrides") == a.extra:
                continue
            r = fit(CONFIGS[model], a.root, fam, a.epochs, a.extra, folder=a.lovo)
            r["in_voice_frame_accuracy"] = test_on(CONFIGS[model], r["checkpoint"], a.root,
                                                   f"{a.lovo}/{fam}/test_in_voice.lst")
            r.update(model=model, held_out=fam, epochs_requested=a.epochs, overrides=a.extra,
                     loadavg_after=os.getloadavg())
            rows[key] = r
            print(f"{key}: in-voice {r['in_voice_frame_accuracy']:.3f}  voice-disjoint "
                  f"{r['voice_disjoint_frame_accuracy']:.3f}  ({r['train_seconds']:.0f} s)", flush=True)
            write(out, root, rows, a, fams, time.time() - t0)
    write(out, root, rows, a, fams, time.time() - t0)


def write(out: Path, root: Path, rows: dict, a, fams: list[str], seconds: float) -> None:
    summary = {}
    for model in dict.fromkeys(r["model"] for r in rows.values()):
        mine = [r for r in rows.values() if r["model"] == model]
        iv = [r["in_voice_frame_accuracy"] for r in mine]
        vd = [r["voice_disjoint_frame_accuracy"] for r in mine]
        summary[model] = {"rotations": len(mine), "mean_in_voice": round(sum(iv) / len(iv), 4),
                          "mean_voice_disjoint": round(sum(vd) / len(vd), 4),
                          "gap_points": round(100 * (sum(iv) - sum(vd)) / len(iv), 1),
                          "worst_voice_disjoint": min((r["voice_disjoint_frame_accuracy"], r["held_out"]) for r in mine)}
    corpus = json.loads((root / "corpus.json").read_text())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "bench": "bench/speech_voices.py", "corpus": str(root),
        "corpus_command": a.corpus_command,
        "corpus_hours": corpus.get("hours"), "held_out": a.lovo, "families": fams,
        "rotation_sizes": corpus.get("voices", {}).get("rotations" if a.lovo == "lovo" else "synth_rotations"),
        "summary": summary, "results": rows,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "note": a.note, "bench_seconds_this_call": round(seconds, 1),
    }, indent=2) + "\n")
    plot(rows, out.with_suffix(".png"), a.lovo)


def plot_data(rows: dict) -> tuple[list[str], dict[str, tuple[list[float], list[float]]]]:
    """The families, from the lowest mean voice-disjoint accuracy over the models to the highest,
    and per model its (voice-disjoint, in-voice) accuracies in that order (NaN where a model has
    no row for a family: a partial run)."""
    fams = list(dict.fromkeys(r["held_out"] for r in rows.values()))
    models = list(dict.fromkeys(r["model"] for r in rows.values()))
    cell = {(r["model"], r["held_out"]): r for r in rows.values()}

    def mean_vd(fam: str) -> float:
        vals = [cell[m, fam]["voice_disjoint_frame_accuracy"] for m in models if (m, fam) in cell]
        return sum(vals) / len(vals)

    fams.sort(key=mean_vd)
    nan = float("nan")
    series = {m: ([cell[m, f]["voice_disjoint_frame_accuracy"] if (m, f) in cell else nan for f in fams],
                  [cell[m, f]["in_voice_frame_accuracy"] if (m, f) in cell else nan for f in fams]) for m in models}
    return fams, series


def plot(rows: dict, out: Path, held_out: str = "lovo") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fams, series = plot_data(rows)
    width = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.75 * len(fams) + 2), 4))
    for i, (model, (vd, iv)) in enumerate(series.items()):
        x = [j - 0.4 + (i + 0.5) * width for j in range(len(fams))]
        ax.bar(x, vd, width * 0.9, label=f"{model}: voice-disjoint")
        ax.scatter(x, iv, marker="_", s=120, color="black", linewidths=2, zorder=3,
                   label="in-voice (each model's own bar)" if i == 0 else None)
    ax.set_xticks(range(len(fams)), fams, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("test frame accuracy")
    ax.set_ylim(0, 1)
    ax.set_xlabel("held-out synthesizer" if held_out == "lovo_synth" else "held-out voice family")
    ax.set_title("in-voice (ticks) and voice-disjoint (bars), one run per rotation", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


if __name__ == "__main__":
    main()
