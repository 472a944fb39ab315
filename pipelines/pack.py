"""``vecset pack RUN_DIR OUT_DIR``: a finished run -> a model folder that ``vecset.pretrained(OUT_DIR)``
and ``vecset predict --model OUT_DIR`` read, as Hugging Face's ``save_pretrained`` writes one.

The folder holds ``model.pt`` (the best checkpoint's fp32 weights and hyperparameters, and under
``predictor`` what predicting needs from the training data: the job predictor's ``pack_extra``),
``card.json`` (the card's numbers: which predictor class reads the folder, the data files and
their sha256, the split, the run's test metrics from ``results.json``, the test split's metric
through the predictor, a fixed slice of it, predictions for three inputs, the date) and
``README.md``, the model card written from it. The run's data module names its job's predictor
(``VecsetDataModule.predictor``). ``scripts/ship_predictors.py`` packs the shipped models with
``pack`` too. Several run folders: a deep ensemble's members (the first one's config is used).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import torch
import yaml

from vecset.pipelines.predictor import (
    CARD_FILE,
    MODEL_FILE,
    Predictor,
    PredictorError,
    checkpoint_bundle,
    fp32,
)

SLICE = 40  # the first SLICE test items: the card's slice, which a test can score again


def run_config(run_dir: Path) -> dict:
    """A run folder's ``config.yaml`` (as LightningCLI saved it)."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise PredictorError(f"{run_dir}: no config.yaml (a run folder is runs/<config>/version_<n>, as vecset fit "
                             "writes it)")
    return yaml.safe_load(path.read_text()) or {}


def best_checkpoint(run_dir: Path) -> tuple[dict, Path]:
    """A run's results.json and its best checkpoint's path: the last weights where the budget
    ended the first epoch before its validation (results.json's checkpoint is then null), as
    the run's test scored them."""
    path = run_dir / "results.json"
    if not path.is_file():
        raise PredictorError(f"{run_dir}: no results.json (the run did not finish: vecset fit writes it at the end)")
    results = json.loads(path.read_text())
    best = Path(results.get("checkpoint") or results.get("last_checkpoint") or "")
    best = best if best.is_absolute() and best.is_file() else run_dir / "checkpoints" / best.name
    if not best.is_file():
        raise PredictorError(f"{path}: its checkpoint {best.name!r} is not in {run_dir / 'checkpoints'}")
    return results, best


def bundle_of(run_dirs: list[Path]) -> tuple[dict, type[Predictor], dict, dict]:
    """What ``model.pt`` holds for ``run_dirs`` (one run, or an ensemble's members), the
    predictor class, the test split (``pack_extra``'s) and the first run's results.json."""
    run_dir = run_dirs[0]
    config = run_config(run_dir)
    results, best = best_checkpoint(run_dir)
    bundle, cls, test = checkpoint_bundle(config, best, str(run_dir / "config.yaml"))
    others = [torch.load(best_checkpoint(d)[1], map_location="cpu", weights_only=True) for d in run_dirs[1:]]
    if others:
        bundle["members"] = [fp32(c["state_dict"]) for c in others]
    return bundle, cls, test, results


def load_run(run_dir: Path) -> Predictor:
    """A run folder's predictor, packed in memory (``vecset predict --model runs/<job>/version_<n>``):
    the same values as the folder ``vecset pack`` writes from it."""
    bundle, cls, _, results = bundle_of([run_dir])
    return cls(run_dir.parent.name, run_dir / "config.yaml", bundle, {"run": results, "name": run_dir.parent.name})


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def folder_sha256(folder: Path) -> tuple[str, int, int]:
    """A folder's sha256 (of each file's relative path and sha256, sorted), file count and bytes."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.relative_to(folder).as_posix()} {sha256(p)}\n".encode())
    return h.hexdigest(), len(files), sum(p.stat().st_size for p in files)


def data_files(config: dict) -> list[dict]:
    """Every file or folder the data module's arguments name (its CSV, a folder of series or
    images; not its cache), with its sha256 (a folder's: ``folder_sha256``). A path is found as
    the data modules find it (``vecset.shipped.data_file``: from the working directory, else the
    shipped data), so a run on the shipped data names its files from any folder."""
    from vecset.shipped import data_file

    out = []
    for key, value in sorted(((config.get("data") or {}).get("init_args") or {}).items()):
        # a cache the data module writes (``cache_dir``) is not data
        if "cache" in key or not (isinstance(value, str) and value):
            continue
        try:
            path = data_file(value, key)
        except OSError:  # not a path (a phone set's name, ...), or gone
            continue
        if path.is_file():
            out.append({"argument": key, "path": value, "sha256": sha256(path), "bytes": path.stat().st_size})
        elif path.is_dir():
            digest, count, size = folder_sha256(path)
            out.append({"argument": key, "path": value, "sha256": digest, "bytes": size, "files": count})
    return out


def started_from(config: dict) -> dict | None:
    """The warm start a run's fit began from (``model.init_args.init_from``): the file as the config
    names it, the parts loaded, its sha256 and, for a trunk ``scripts/export_trunk.py`` wrote, its
    ``pretraining`` record (the corpus and its sha256, the licence, the command, step and
    validation); None for a run from scratch. A file that is gone is named, with ``sha256`` null."""
    from vecset.pipelines.training.checkpoint_files import read_checkpoint
    from vecset.pipelines.training.warm_start import init_path

    args = (config.get("model") or {}).get("init_args") or {}
    source = args.get("init_from")
    if not source:
        return None
    out = {"init_from": source, "init_parts": args.get("init_parts"), "sha256": None, "pretraining": None}
    try:
        path = Path(init_path(source))
    except FileNotFoundError:
        return out
    if path.is_file():
        out["sha256"] = sha256(path)
        record = read_checkpoint(path).get("pretraining")
        out["pretraining"] = {k: v for k, v in (record or {}).items() if k != "note"} or None
    return out


def split_of(config: dict) -> dict:
    """The data module's arguments that choose the split (``split``, ``*_fraction``, ``*seed*``)."""
    args = (config.get("data") or {}).get("init_args") or {}
    return {k: v for k, v in sorted(args.items()) if "split" in k or "fraction" in k or "seed" in k}


def pack(run_dirs: list[Path], out: Path, *, name: str | None = None, data: str | None = None,
         licence: str | None = None, config: str | None = None, fit_args: list[str] | None = None,
         slice_size: int = SLICE, build_seconds: float | None = None, about: str | None = None,
         blend: str | None = None) -> dict:
    """Write ``model.pt``, ``card.json`` and ``README.md`` for ``run_dirs`` into ``out``; the card.
    ``name``, ``data``, ``licence``, ``config``, ``about``: what the card says (default: the run's
    folder name, its data files, none, its config.yaml, nothing on what the model is for).
    ``blend``: a descriptor model to blend with, tuned on the run's validation split
    (``pipelines/molecules/blend.py``; molecule runs), written beside ``model.pt``."""
    run_dirs = [Path(d) for d in run_dirs]
    run_dir, out = run_dirs[0], Path(out)
    bundle, cls, test, results = bundle_of(run_dirs)
    cfg = run_config(run_dir)
    name = name or run_dir.parent.name
    predictor = cls(name, run_dir / "config.yaml", bundle, {})
    if blend is not None:
        predictor.fit_blend(cfg, blend)
    inputs, targets = test["inputs"], test["targets"]
    t0 = time.perf_counter()
    rows = predictor.predict(inputs)
    seconds = time.perf_counter() - t0
    text_inputs = bool(inputs) and isinstance(inputs[0], str)
    config = config or str(run_dir / "config.yaml")
    fit_args = fit_args or []
    card = {
        "name": name,
        **({"about": about} if about else {}),
        "predictor": f"{cls.__module__}.{cls.__qualname__}",
        "config": config, "fit_args": fit_args, "command": " ".join(["vecset fit --config", config, *fit_args]),
        "data": data or ", ".join(f["path"] for f in data_files(cfg)) or "see config", "licence": licence,
        "data_files": data_files(cfg), "split": split_of(cfg), "started_from": started_from(cfg),
        "run": {k: results.get(k) for k in ("test", "best_val", "monitor", "epochs", "global_steps", "wall_seconds",
                                            "precision")},
        "run_dir": str(run_dir),
        "checkpoint": best_checkpoint(run_dir)[1].name,
        "members": [{"seed": run_config(d).get("seed_everything"), "test": r.get("test"), "best_val": r.get("best_val"),
                     "wall_seconds": r.get("wall_seconds")} for d, r in
                    zip(run_dirs, [results, *(best_checkpoint(d)[0] for d in run_dirs[1:])], strict=True)],
        **({"blend": predictor.blend} if blend is not None else {}),
        "test_through_predictor": predictor.score(rows, targets) | {"seconds": round(seconds, 2)},
        "slice": {"first": slice_size, "inputs": inputs[:slice_size] if text_inputs else None,
                  "indices": test.get("indices", [])[:slice_size] or None, "targets": targets[:slice_size],
                  "metrics": predictor.score(rows[:slice_size], targets[:slice_size])},
        **predictor.card_fields(rows, targets),
        "size_bytes": None,
        "build_seconds": build_seconds,
        "torch": torch.__version__,
        "date": datetime.now(UTC).date().isoformat(),
    }
    if cls.known_inputs is not None:
        card["known"] = [{k: v for k, v in r.items() if k != "error"} for r in predictor.predict(cls.known_inputs)]
    elif text_inputs:  # the first three test inputs (file names, ...)
        card["known"] = [{k: v for k, v in r.items() if k != "error"} for r in rows[:3]]
    else:  # the first three test inputs, by index
        card["known"] = [{"index": i} | {k: v for k, v in r.items() if k not in ("error", "input")}
                         for i, r in zip(test["indices"][:3], rows[:3], strict=True)]
    # written once everything is computed: a failure leaves no half-written folder
    out.mkdir(parents=True, exist_ok=True)
    torch.save(bundle, out / MODEL_FILE)
    card["size_bytes"] = (out / MODEL_FILE).stat().st_size + write_peer(predictor, out)
    (out / CARD_FILE).write_text(json.dumps(card, indent=1) + "\n")
    (out / "README.md").write_text(readme(card, predictor, cfg))
    return card


def write_peer(predictor: Predictor, out: Path) -> int:
    """The blend's descriptor model beside ``model.pt``, its bytes (0 without a blend, an older
    pack's peer file removed)."""
    from vecset.pipelines.molecules.blend import PEER_FILE, save_peer

    if predictor.peer is None:
        (out / PEER_FILE).unlink(missing_ok=True)
        return 0
    return save_peer(predictor.peer, out).stat().st_size


def data_given(card: dict) -> bool:
    """The card's ``data`` is words given to ``pack`` (not its data files' paths, which it lists)."""
    return card["data"] != ", ".join(f["path"] for f in card["data_files"])


def readme(card: dict, predictor: Predictor, config: dict) -> str:
    """The model card as Markdown, from ``card.json`` and the run's config."""
    files = "\n".join(f"- `{f['path']}` ({f['argument']}, {f.get('files', 1)} file(s), {f['bytes']} bytes), "
                      f"sha256 `{f['sha256']}`" for f in card["data_files"]) or f"- {card['data']}"
    run = card["run"]
    lines = [
        f"# {card['name']}", "",
        f"A vecset model packed on {card['date']} from `{card['run_dir']}` (checkpoint `{card['checkpoint']}`), "
        f"read by `{card['predictor']}`." + (f" {card['about']}" if card.get("about") else ""), "",
        "```python", "import vecset", "",
        f"predictor = vecset.pretrained(\"path/to/{card['name']}\")  # this folder",
        f"predictor.predict([...], as_frame=True)  # columns: {', '.join(predictor.columns)}", "```", "",
        f"or `vecset predict --model path/to/this/folder {predictor.input_flag} ...` "
        f"(or `--input FILE.csv` with a `{predictor.input_column}` column; its other columns are kept).", "",
        "## Data", "", *([card["data"], ""] if card["data_files"] and data_given(card) else []), files, "", f"Split: `{json.dumps(card['split'])}`."
        + (f" Licence: {card['licence']}." if card.get("licence") else ""), "",
        "## Results", "",
        f"The run's test metrics (`results.json`, monitored `{run.get('monitor')}`, best {run.get('best_val')}, "
        f"{run.get('epochs')} epochs, {run.get('global_steps')} steps): `{json.dumps(run.get('test'))}`.", "",
        *blend_lines(card.get("blend")),
        f"The test split through this predictor: `{json.dumps(card['test_through_predictor'])}`.", "",
        "## Training", "", f"`{card['command']}`", "", *warm_start_lines(card.get("started_from")), "```yaml",
        yaml.safe_dump({k: config[k] for k in ("seed_everything", "model", "data") if k in config},
                       sort_keys=False).rstrip(), "```", ""]
    return "\n".join(lines)


def blend_lines(blend: dict | None) -> list[str]:
    """The card's lines on a blend with a descriptor model (``vecset pack --blend``), or none."""
    if not blend:
        return []
    v = blend["validation"]
    return [f"Blended: {blend['weight']} x the attention model + {round(1 - blend['weight'], 2)} x `{blend['peer']}` "
            f"(`{json.dumps(blend['setting'])}`) on the RDKit descriptors, read from `peer.skops`; setting and weight "
            f"chosen on the {blend['molecules']['val']} validation molecules ({v['metric']}: attention "
            f"{v['attention']:.4f}, {blend['peer']} {v['peer']:.4f}, blend {v['blend']:.4f}).", ""]


def warm_start_lines(start: dict | None) -> list[str]:
    """The card's lines on the warm start: the trunk's file, hash and pretraining record, or none."""
    if not start:
        return ["Trained from scratch (no warm start).", ""]
    parts = ", ".join(start.get("init_parts") or ["all parts"])
    text = f"Started from `{start['init_from']}` ({parts}; sha256 `{start['sha256']}`)"
    pre = start.get("pretraining")
    if pre:
        text += (f": pretrained on `{pre.get('data')}` ({pre.get('data_rows')} rows, sha256 `{pre.get('data_sha256')}`; "
                 f"{pre.get('licence')}) for {pre.get('global_step')} steps with `{pre.get('config')}`")
    return [text + ".", ""]


def main(argv: list[str]) -> None:
    """``vecset pack RUN_DIR [RUN_DIR ...] OUT_DIR``."""
    import argparse

    p = argparse.ArgumentParser(prog="vecset pack", description=__doc__.split("\n\n")[0].replace("``", "`"))
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR",
                   help="a run folder (runs/<config>/version_<n>); several: an ensemble's members")
    p.add_argument("out", type=Path, metavar="OUT_DIR", help="the model folder to write")
    p.add_argument("--name", help="the model's name on its card (default: the run's config name)")
    p.add_argument("--blend", choices=["svr", "hgb", "forest"],
                   help="molecules: blend with a descriptor model (scikit-learn's SVR, regression only; "
                        "HistGradientBoosting; random forest), its setting and weight chosen on the run's "
                        "validation split")
    args = p.parse_args(argv)
    try:
        if args.out.exists() and not args.out.is_dir():
            raise PredictorError(f"OUT_DIR {args.out}: a file, not a folder")
        card = pack(args.runs, args.out, name=args.name, blend=args.blend)
    except PredictorError as e:
        sys.stderr.write(f"error: {e}\n")
        raise SystemExit(2) from None
    if "blend" in card:
        b = card["blend"]
        v = b["validation"]
        print(f"blend: {b['weight']} x attention + {round(1 - b['weight'], 2)} x {b['peer']} {b['setting']}; validation "
              f"{v['metric']} attention {v['attention']:.4f}, {b['peer']} {v['peer']:.4f}, blend {v['blend']:.4f}")
    print(f"packed {args.out}: {card['predictor'].rsplit('.', 1)[1]}, test through the predictor "
          f"{json.dumps(card['test_through_predictor'])}")


__all__ = ["best_checkpoint", "bundle_of", "load_run", "main", "pack", "run_config", "started_from"]
