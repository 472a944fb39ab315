"""Trained models to predict with, by name or folder (``vecset.pretrained(name_or_dir)``,
``vecset predict --model NAME-or-DIR``), as Hugging Face's ``from_pretrained(name_or_dir)``:

- a shipped name: a folder ``vecset/models/<name>/`` inside the package (package data, found
  with ``importlib.resources``; the names are its folders, matched without regard to case);
- a model folder that ``vecset pack RUN_DIR OUT_DIR`` wrote (``model.pt``, ``card.json``);
- a run folder (``runs/<config>/version_<n>``: its config.yaml and best checkpoint), packed in
  memory as ``vecset pack`` would pack it.

Each folder's ``card.json`` names the predictor class that reads it (its job's:
``pipelines/<job>/predictor.py``); nothing here names a job, and a shipped name imports only
its own job's predictor (``vecset predict --model solubility`` imports no Lightning). Every
path gives the same rows (``Predictor.predict``): the input columns kept, the predicted values,
``error`` in place.
"""

from __future__ import annotations

import io
import os
import re
import sys
from importlib import resources
from pathlib import Path

from vecset.pipelines.predictor import (
    CARD_FILE,
    MODEL_FILE,
    Predictor,
    PredictorError,
    config_predictor_class,
    import_class,
    load_folder,
    read_inputs,
    write_rows,
)


def models_dir() -> Path:
    """``vecset/models/`` of the installed package (the checkout's own in an editable install)."""
    return Path(str(resources.files("vecset") / "models"))


def shipped() -> list[str]:
    """The shipped names: the folders of ``models_dir()`` with a card."""
    root = models_dir()
    return sorted(p.name for p in root.iterdir() if (p / CARD_FILE).is_file()) if root.is_dir() else []


def available() -> dict[str, bool]:
    """Every shipped name -> whether its weights are present."""
    return {name: (models_dir() / name / MODEL_FILE).is_file() for name in shipped()}


def locate(name_or_dir: str | Path) -> tuple[str, Path]:
    """``("folder", path)`` for a model folder or a shipped name, ``("run", path)`` for a run
    folder; a PredictorError naming the choices otherwise."""
    path = Path(name_or_dir)
    if (path / MODEL_FILE).is_file() or (path / CARD_FILE).is_file():
        return "folder", path
    if (path / "config.yaml").is_file():
        return "run", path
    text = str(name_or_dir)
    match = [n for n in shipped() if n.lower() == text.lower()]
    if match:
        return "folder", models_dir() / match[0]
    what = f"{text}: a folder without model.pt or config.yaml" if path.is_dir() else f"{text!r}: no such shipped predictor"
    raise PredictorError(f"--model {what}; give a shipped name ({', '.join(shipped())}), a model folder "
                         "(vecset pack RUN_DIR OUT_DIR writes one) or a run folder (runs/<config>/version_<n>)")


def predictor_class(name_or_dir: str | Path) -> type[Predictor]:
    """The predictor class that reads ``name_or_dir``, without loading its weights."""
    kind, path = locate(name_or_dir)
    if kind == "run":
        from vecset.pipelines.pack import run_config

        return config_predictor_class(run_config(path), str(path / "config.yaml"))
    import json

    card = json.loads((path / CARD_FILE).read_text()) if (path / CARD_FILE).is_file() else {}
    return import_class(card.get("predictor"), f"{path / CARD_FILE}: predictor")


def pretrained(name_or_dir: str | Path) -> Predictor:
    """The predictor of a shipped name, a model folder or a run folder, ready to ``predict``."""
    kind, path = locate(name_or_dir)
    if kind == "run":
        from vecset.pipelines.pack import load_run

        return load_run(path)
    if not (path / MODEL_FILE).is_file():
        raise PredictorError(f"--model {name_or_dir}: {path / MODEL_FILE} is missing (this install has no weights "
                             "for it; `make models` builds the shipped ones)")
    return load_folder(path, path.name if path.parent == models_dir() else None)


# -- the command line: vecset predict --model NAME-or-DIR ... --------------------------------


def check_out(path: Path) -> None:
    """``--out`` must be a file that can be written, checked before any work."""
    if path.is_dir():
        raise PredictorError(f"--out {path}: a folder (give the CSV file's name)")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise PredictorError(f"--out {path}: cannot write there ({parent} is a file, not a folder)")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise PredictorError(f"--out {path}: cannot write there (permission denied)")


def check_out_dir(path: Path) -> None:
    """``--out`` of a predictor that writes files: a folder that can be made and written."""
    if path.exists() and not path.is_dir():
        raise PredictorError(f"--out {path}: a file (give the folder to write the files into)")
    parent = path
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise PredictorError(f"--out {path}: cannot write there ({parent} is not a folder that can be written)")


def file_targets(cls: type[Predictor], sources: list[str], out: Path | None, formats: list[str]) -> list[list[Path]]:
    """Per input, the files ``write_file`` writes: beside the input (never over an existing file:
    an alignment may be there), or into ``out`` (named by the input's stem; a stem seen before
    gets its folder's name, then a number)."""
    used: set[str] = set()
    targets = []
    for i, src in enumerate(map(Path, sources)):
        if out is None:
            paths = [src.with_suffix(cls.file_suffix(f)) for f in formats]
            there = [str(p) for p in paths if p.exists()]
            if there:
                raise PredictorError(f"{there[0]}: exists; vecset predict writes beside the input only where no such "
                                     "file is (it may be an alignment): give --out DIR")
        else:
            name = src.stem
            for candidate in (src.stem, f"{src.parent.name}_{src.stem}", f"{src.stem}_{i}"):
                if candidate not in used:
                    name = candidate
                    break
            used.add(name)
            paths = [out / f"{name}{cls.file_suffix(f)}" for f in formats]
        targets.append(paths)
    return targets


def parser(model_flag: str | None, metavar: str = "INPUT", formats: tuple[str, ...] = ()):
    import argparse

    p = argparse.ArgumentParser(
        prog="vecset predict",
        description="Predict with a trained model: a shipped name, a model folder (vecset pack) or a run folder "
                    "(runs/<config>/version_<n>). No config or checkpoint needed. Writes a CSV: the input columns, "
                    "the predicted ones, an error column (empty where the row was predicted)."
                    + (" This model also writes a file per input (--format), which the CSV lists." if formats else ""))
    p.add_argument("--model", required=True, metavar="NAME-or-DIR",
                   help=f"a shipped name ({', '.join(shipped())}; any case), a model folder or a run folder")
    if model_flag is not None:
        p.add_argument(model_flag, nargs="+", dest="given", metavar=metavar, help="the inputs")
    p.add_argument("--input", type=Path, help="a CSV (its --column; every column kept) or a text file, one input a line")
    p.add_argument("--column", default=None, help="the --input CSV's column (default: the model's, e.g. smiles)")
    if formats:
        p.add_argument("--format", nargs="+", choices=formats, default=[formats[0]],
                       help=f"the file(s) written per input (default: {formats[0]})")
        p.add_argument("--out", type=Path, metavar="DIR",
                       help="write the files into this folder (default: beside each input); the CSV listing them "
                            "goes to stdout")
    else:
        p.add_argument("--out", type=Path, help="write the CSV here (default: stdout)")
    return p


def command_main(argv: list[str]) -> int:
    """``vecset predict --model NAME-or-DIR`` with the model's input option (``--smiles``, ...)
    or ``--input FILE``: a CSV of the rows to stdout or ``--out``; notes on stderr; exit 2 when
    a setting is wrong or no input could be predicted."""
    import argparse

    pre = argparse.ArgumentParser(add_help=False)  # the model and --out first: the model's input option follows
    pre.add_argument("--model")
    pre.add_argument("--out", type=Path)
    first, rest = pre.parse_known_args(argv)
    asks_help = any(a in ("-h", "--help") for a in argv)
    if first.model is None:
        parser(None).parse_args(argv)  # its help, or the usage error naming --model
    try:
        try:
            cls = predictor_class(first.model)
        except PredictorError:
            if asks_help:
                parser(None).parse_args(["--help"])
            if first.out is not None:
                check_out(first.out)
            raise
        if first.out is not None:
            (check_out_dir if cls.file_formats else check_out)(first.out)
        known = (cls.input_flag, "--input", "--column", "--help", *(("--format",) if cls.file_formats else ()))
        wrong = next((a for a in rest if a.startswith("--") and a.split("=")[0] not in known), None)
        if wrong is not None:
            raise PredictorError(f"{wrong}: not an input of --model {first.model} (it takes {cls.input_flag} or --input)")
        args = parser(cls.input_flag, cls.input_column.upper(), cls.file_formats).parse_args(argv)
        if (args.given is not None) == (args.input is not None):
            raise PredictorError(f"--model {args.model}: give its inputs with {cls.input_flag} or --input FILE (one of them)")
        inputs = args.given if args.given is not None else read_inputs(args.input, args.column or cls.input_column)
        targets = None
        if cls.file_formats:  # where each input's files go, checked before any work
            sources = inputs if isinstance(inputs, list) else list(inputs[args.column or cls.input_column])
            targets = file_targets(cls, sources, args.out, args.format)
        predictor = pretrained(args.model)
    except PredictorError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    rows = predictor.predict(inputs, column=args.column)
    columns = predictor.columns_for(None if isinstance(inputs, list) else list(inputs.columns))
    if targets is not None:
        rows, columns = written_files(predictor, rows, columns, targets, args.format)
        args.out = None  # the files are written; the CSV listing them goes to stdout
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="") as f:
            write_rows(rows, columns, f)
    else:
        text = io.StringIO()
        write_rows(rows, columns, text)
        sys.stdout.write(text.getvalue())
    failed = [r for r in rows if r["error"]]
    if rows and len(failed) == len(rows):
        sys.stderr.write(f"error: none of the {len(rows)} inputs could be predicted (their error column says why; "
                         f"the first: {failed[0]['error']})\n")
        return 2
    if failed:
        sys.stderr.write(f"{len(failed)} of {len(rows)} inputs could not be predicted (their error column says why)\n")
    for line in predictor.notes([r for r in rows if not r["error"]]):
        sys.stderr.write(line + "\n")
    return 0


def written_files(predictor: Predictor, rows: list[dict], columns: list[str], targets: list[list[Path]],
                  formats: list[str]) -> tuple[list[dict], list[str]]:
    """Each predicted row's files written (``Predictor.write_file``); the rows for the CSV: the
    input columns, the ``table_values``, ``files`` (``;``-separated) and ``error``."""
    for row, paths in zip(rows, targets, strict=True):
        row["files"] = ""
        if row["error"]:
            continue
        for path, fmt in zip(paths, formats, strict=True):
            path.parent.mkdir(parents=True, exist_ok=True)
            predictor.write_file(row, path, fmt)
        row["files"] = ";".join(map(str, paths))
    shown = predictor.table_values if predictor.table_values is not None else predictor.values
    given = [c for c in columns if c not in predictor.values and c != "error"]
    return rows, [*given, *shown, "files", "error"]


def wants_predictor(argv: list[str]) -> bool:
    """``vecset predict --model NAME-or-DIR`` (a predictor) rather than LightningCLI's predict,
    whose ``--model`` takes a config file, a class name or ``--model.init_args...``: no
    ``--config``, and a ``--model`` that is a folder, or a name that is not a file, a dotted
    class path or one of vecset's module classes."""
    if argv[:1] != ["predict"] or any(a in ("--config", "-c") or a.startswith("--config=") for a in argv):
        return False
    for i, a in enumerate(argv[1:], 1):
        value = a.split("=", 1)[1] if a.startswith("--model=") else argv[i + 1] if a == "--model" and i + 1 < len(argv) else None
        if value is None:
            continue
        if Path(value).is_dir():
            return True
        if Path(value).is_file() or value in ("TaskModule", "MultiTaskModule"):
            return False
        return re.fullmatch(r"[A-Za-z0-9_-]+", value) is not None
    return False


__all__ = ["available", "check_out", "command_main", "locate", "models_dir", "predictor_class", "pretrained",
           "shipped", "wants_predictor"]
