"""The Predictor contract: a trained model with its input checks, plain inputs in, one row per
input out (``vecset.pretrained(name_or_dir).predict(...)``, ``vecset predict --model``). Each
job's own predictor lives in its folder (``pipelines/<job>/predictor.py``) and its data module
names it (``VecsetDataModule.predictor``); this module names no job.

A model folder (``model.pt`` + ``card.json``, written by ``vecset pack``) says which predictor
class reads it: ``card.json``'s ``predictor``, a class path, as Hugging Face's ``config.json``
names its architecture; the class is imported when the folder is read.

Predicting imports torch and the model's own encoder, backbone and head, not Lightning: the
model is rebuilt as plain ``nn.Module``s from its hyperparameters (``build_model``), read with
``torch.load(weights_only=True)`` (no code from the file runs).
"""

from __future__ import annotations

import copy
import csv
import importlib
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from vecset.pipelines.training.forward import forward_task

MODEL_FILE, CARD_FILE = "model.pt", "card.json"


class PredictorError(ValueError):
    """A predictor that cannot be used (unknown name, missing files, bad input file); the first
    line says which."""


class PredictorModel(nn.Module):
    """encoder -> backbone -> head: a TaskModule's forward in evaluation (``forward_task``, with
    its ``test_time_flip``) without Lightning, with the same parameter names (``encoder.*``,
    ``backbone.*``, ``head.*``), so a TaskModule's state dict loads into it as it is."""

    def __init__(self, encoder: nn.Module, backbone: nn.Module, head: nn.Module, test_time_flip: bool = False) -> None:
        super().__init__()
        self.encoder, self.backbone, self.head = encoder, backbone, head
        self.test_time_flip = test_time_flip

    def forward(self, batch: dict) -> Any:
        return forward_task(self.encoder, self.backbone, self.head, batch, self.test_time_flip)


def import_class(path: Any, where: str) -> type:
    """A class of vecset's from its dotted path; anything else is refused (a model folder names
    no other code to run)."""
    if not (isinstance(path, str) and path.startswith("vecset.")):
        raise PredictorError(f"{where}: {path!r} is not one of vecset's classes (a model folder builds vecset's "
                             "encoders, backbones, heads and predictors only)")
    module, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise PredictorError(f"{where}: {path!r}: {e}") from None


def instantiate(spec: Any, where: str) -> Any:
    """A config's ``class_path``/``init_args`` (nested ones too) -> the object, as LightningCLI
    built it for the training run. Only vecset's own classes."""
    if isinstance(spec, list):
        return [instantiate(v, f"{where}[{i}]") for i, v in enumerate(spec)]
    if not isinstance(spec, dict):
        return spec
    if "class_path" not in spec:
        return {k: instantiate(v, f"{where}.{k}") for k, v in spec.items()}
    cls = import_class(spec["class_path"], f"{where}.class_path")
    # dict_kwargs: jsonargparse's place for a **kwargs class's other arguments
    args = {**(spec.get("init_args") or {}), **(spec.get("dict_kwargs") or {})}
    return cls(**{k: instantiate(v, f"{where}.init_args.{k}") for k, v in args.items()})


def build_model(path: Path, bundle: dict) -> PredictorModel:
    """The model of a ``model.pt``'s contents: encoder, backbone and head rebuilt from the
    hyperparameters of the TaskModule that trained them, its weights loaded (strictly: every
    tensor, no other), in eval mode on the CPU."""
    hp = bundle["hyper_parameters"]
    if hp.get("_class_path") != "vecset.pipelines.TaskModule":
        raise PredictorError(f"{path}: hyper_parameters._class_path is {hp.get('_class_path')!r}; a predictor "
                             "is a vecset.pipelines.TaskModule's (one encoder, backbone and head)")
    model = PredictorModel(*(instantiate(hp[part], f"{path}: hyper_parameters.{part}")
                             for part in ("encoder", "backbone", "head")),
                           test_time_flip=bool(hp.get("test_time_flip", False)))  # as its validation and test
    model.load_state_dict(bundle["state_dict"])
    return model.eval()


def _batches(n: int, size: int) -> list[range]:
    return [range(i, min(n, i + size)) for i in range(0, n, size)]


class Predictor:
    """A trained model with its input checks: ``predict(inputs)`` -> one row per input, in order.

    The rows' columns (``columns_for``): the input (``input``, or every column of a DataFrame
    given as the inputs), the predicted values (``values``; an input's column of the same name
    is renamed ``<name>_input``), ``error`` last (empty where the row was predicted; an input
    that cannot be predicted keeps its row, its values empty).

    A job's predictor declares ``input_column`` (the inputs' column of a CSV or DataFrame) and
    ``input_flag`` (the command's option for them), and implements ``prepare``, ``run`` and
    ``pack_extra`` (what the data module computed from the training data, for ``vecset pack``).
    """

    input_column: ClassVar[str]
    input_flag: ClassVar[str]
    # inputs whose predictions a packed card records (None: the test split's first three)
    known_inputs: ClassVar[list | None] = None
    values: list[str]
    # a job whose rows hold more than a CSV cell (a recording's frame labels) writes a file per
    # input in one of these formats (``write_file``; ``vecset predict --format``, ``--out DIR``),
    # and the command's CSV lists those files with the ``table_values`` (None: every value)
    file_formats: ClassVar[tuple[str, ...]] = ()
    table_values: ClassVar[list[str] | None] = None

    def __init__(self, name: str, path: Path, bundle: dict, card: dict) -> None:
        self.name, self.card, self.extra = name, card, bundle["predictor"]
        self.model = build_model(path, bundle)
        # a deep ensemble's other members (``members``: their weights; same config, other seeds)
        self.models = [self.model]
        for state in bundle.get("members", []):
            member = copy.deepcopy(self.model)
            member.load_state_dict(state)
            self.models.append(member.eval())

    @property
    def columns(self) -> list[str]:
        """The rows' columns for plain inputs."""
        return self.columns_for(None)

    def columns_for(self, frame_columns: Sequence[str] | None) -> list[str]:
        given = ["input"] if frame_columns is None else [self._renamed(c) for c in frame_columns]
        return [*given, *self.values, "error"]

    def _renamed(self, column: str) -> str:
        return f"{column}_input" if column in (*self.values, "error") else column

    def predict(self, inputs: Any, batch_size: int = 64, *, column: str | None = None, as_frame: bool = False):
        """``inputs``: one input (a str is one input, never its letters), a sequence of them, or
        a pandas DataFrame whose ``column`` (default ``input_column``) holds them (its columns are
        kept in the rows). A list of dicts, or a DataFrame with ``as_frame``."""
        pd = sys.modules.get("pandas")  # not imported: the inputs are no DataFrame (pandas takes half a second)
        if pd is not None and isinstance(inputs, pd.DataFrame):
            col = column or self.input_column
            if col not in inputs.columns:
                raise PredictorError(f"no column {col!r} among the inputs' columns {list(inputs.columns)}")
            firsts = [{self._renamed(k): v for k, v in rec.items()} for rec in inputs.to_dict("records")]
            values, frame_columns = list(inputs[col]), list(inputs.columns)
        else:
            if isinstance(inputs, str | Path | bytes) or not isinstance(inputs, Sequence | np.ndarray):
                inputs = [inputs]
            values, frame_columns = list(inputs), None
            firsts = [{"input": self.describe(v)} for v in values]
        columns = self.columns_for(frame_columns)
        rows, ready = [], []  # ready: (row index, prepared item)
        for i, (value, first) in enumerate(zip(values, firsts, strict=True)):
            row = {c: "" for c in columns} | first
            try:
                ready.append((i, self.prepare(value)))
            except ValueError as e:
                row["error"] = str(e)
            rows.append(row)
        with torch.inference_mode():
            for part in _batches(len(ready), batch_size):
                chosen = [ready[j] for j in part]
                for (i, _), v in zip(chosen, self.run([item for _, item in chosen]), strict=True):
                    rows[i].update(v)
        if as_frame:
            import pandas as pd

            return pd.DataFrame(rows, columns=columns)
        return rows

    def describe(self, value: Any) -> str:
        return str(value)

    def prepare(self, value: Any) -> Any:
        """One input -> what ``run`` batches; ValueError (the row's error) when it cannot be."""
        raise NotImplementedError

    def run(self, items: list) -> list[dict]:
        """A batch of prepared items -> the predicted columns of each row."""
        raise NotImplementedError

    @staticmethod
    def file_suffix(fmt: str) -> str:
        """The file name's suffix of a ``file_formats`` format (``.TextGrid``)."""
        raise NotImplementedError

    def write_file(self, row: dict, path: Path, fmt: str) -> None:
        """A predicted row as a file in one of ``file_formats``."""
        raise NotImplementedError

    def notes(self, rows: list[dict]) -> list[str]:
        """Lines the command prints on stderr about predicted rows (flags a user should see)."""
        return []

    @classmethod
    def pack_extra(cls, config: dict) -> tuple[dict, dict]:
        """A run's ``config.yaml`` -> what predicting needs from its training data (``extra``,
        saved under ``predictor`` in ``model.pt``) and its test split: ``inputs`` and
        ``targets`` (``indices`` where the inputs are not text), for the card."""
        raise NotImplementedError

    def card_fields(self, rows: list[dict], targets: list) -> dict:
        """The card's own fields over the test split's predicted rows (a molecule model's domain)."""
        return {}

    # a second model blended with this one (``vecset pack --blend``: the molecule job's), written
    # beside ``model.pt``; None where there is none
    peer: Any = None

    def fit_blend(self, config: dict, peer: str) -> dict:
        """Blend with ``peer`` fit on the run's data (``config``): the blend's record for the card."""
        raise PredictorError(f"--blend: {type(self).__name__} has no blend (the molecule job's predictor has)")

    def score(self, rows: list[dict], targets: list) -> dict:
        """The job's test metric of predicted ``rows`` against ``targets`` (the card's slice and
        test numbers); an error row is an error here: every test input must be predicted."""
        bad = [r for r in rows if r["error"]]
        if bad:
            raise ValueError(f"{len(bad)} of {len(rows)} inputs were not predicted, e.g. {bad[0]['input']!r}: "
                             f"{bad[0]['error']}")
        if len(rows) != len(targets):
            raise ValueError(f"{len(rows)} rows but {len(targets)} targets")
        return self._score(rows, targets) | {"count": len(rows)}

    def _score(self, rows: list[dict], targets: list) -> dict:
        return {"accuracy": float(np.mean([r["prediction"] == t for r, t in zip(rows, targets, strict=True)]))}


def load_folder(folder: Path, name: str | None = None) -> Predictor:
    """A model folder (``model.pt``, ``card.json``) -> its predictor, of the class its card names."""
    import json

    if not (folder / MODEL_FILE).is_file():
        raise PredictorError(f"{folder}: no {MODEL_FILE} (a model folder holds {MODEL_FILE} and {CARD_FILE}; "
                             "`vecset pack RUN_DIR OUT_DIR` writes one)")
    if not (folder / CARD_FILE).is_file():
        raise PredictorError(f"{folder}: no {CARD_FILE} (it names the predictor class that reads {MODEL_FILE})")
    card = json.loads((folder / CARD_FILE).read_text())
    cls = import_class(card.get("predictor"), f"{folder / CARD_FILE}: predictor")
    bundle = torch.load(folder / MODEL_FILE, map_location="cpu", weights_only=True)
    return cls(name or card.get("name") or folder.name, folder / MODEL_FILE, bundle, card)


# -- a run's checkpoint as a predictor, and rows as a CSV (vecset pack, predict --model, --config) --


def config_predictor_class(config: dict, where: str) -> type[Predictor]:
    """The predictor class the run's data module names (its job's)."""
    data = (config.get("data") or {}).get("class_path")
    if data is None:
        raise PredictorError(f"{where}: data.class_path is missing (a run of one task packs; a multi-task run "
                             "does not yet)")
    from vecset.pipelines.data.base import VecsetDataModule

    data_class = import_class(data, f"{where}: data.class_path")
    path = data_class.predictor if isinstance(data_class, type) and issubclass(data_class, VecsetDataModule) else None
    if path is None:
        raise PredictorError(f"{where}: data.class_path {data}: its job has no predictor to pack (the molecule, "
                             "image and G2P jobs have one)")
    return import_class(path, f"{data}.predictor")


def fp32(state: dict) -> dict:
    return {k: v.float() if torch.is_floating_point(v) else v for k, v in state.items()}


def checkpoint_bundle(config: dict, ckpt_path: Path, where: str) -> tuple[dict, type[Predictor], dict]:
    """What ``model.pt`` holds for one checkpoint of a run of ``config`` (its data module's
    arguments: what predicting needs from the training data), the predictor class and the test
    split (``pack_extra``'s). ``where`` names the config in errors."""
    cls = config_predictor_class(config, where)
    ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    try:
        extra, test = cls.pack_extra(config)
    except (OSError, ValueError) as e:  # the data moved or changed since the run (a relative path, another folder)
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise PredictorError(f"{where}: the run's data could not be read again ({first}); packing "
                             "reads it (the training set for the domain check, the test split for the card): run "
                             "from the folder the run was trained in") from None
    bundle = {"state_dict": fp32(ckpt["state_dict"]), "hyper_parameters": ckpt["hyper_parameters"],
              "pytorch-lightning_version": ckpt.get("pytorch-lightning_version"), "predictor": extra}
    return bundle, cls, test


def read_inputs(path: Path, column: str) -> Any:
    """A CSV's rows (a DataFrame of strings: its ``column`` is predicted, every column kept), or
    a text file's lines (one input per line; blank lines kept as empty inputs)."""
    from vecset.encoders.files import read_csv_rows

    if not path.is_file():
        raise PredictorError(f"--input {path}: no such file")
    if path.suffix.lower() == ".csv":
        try:
            df, _ = read_csv_rows(path)
        except ValueError as e:
            raise PredictorError(f"--input {e}") from None
        if column not in df.columns:
            raise PredictorError(f"--input {path}: no column {column!r} (--column); its columns are {list(df.columns)}")
        return df
    return path.read_text().splitlines()


def format_value(v: Any) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.6g}"
    return str(v)


def write_rows(rows: list[dict], columns: list[str], out) -> None:
    w = csv.writer(out, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([format_value(r[c]) for c in columns])


def predict_table(datamodule: Any, ckpt_path: str | Path, config: dict, out_dir: Path, where: str) -> Path:
    """``vecset predict --config ... --ckpt_path FILE`` for data that gives its inputs as a table
    (``VecsetDataModule.predict_table``: the molecule job's ``predict_csv``): the checkpoint read
    as ``vecset pack`` reads a run's, with ``config``'s data (the training set's values: a
    molecule's nearest training neighbours), and the table predicted by its job's predictor, the
    rows ``vecset predict --model RUN_DIR`` writes (input columns kept, errors in place, the same
    uncertainty and domain columns), into ``out_dir/predictions.csv``; its path. Rows not
    predicted are counted on stderr, with the predictor's notes."""
    path, column = datamodule.predict_table()
    bundle, cls, _ = checkpoint_bundle(config, Path(ckpt_path), where)
    predictor = cls(out_dir.parent.name, Path(ckpt_path), bundle, {})
    table = read_inputs(Path(path), column)
    rows = predictor.predict(table, column=column)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / "predictions.csv"
    with open(out, "w", newline="") as f:
        write_rows(rows, predictor.columns_for(list(table.columns)), f)
    failed = sum(bool(r["error"]) for r in rows)
    if failed:
        sys.stderr.write(f"{failed} of {len(rows)} inputs could not be predicted (their error column says why)\n")
    for line in predictor.notes([r for r in rows if not r["error"]]):
        sys.stderr.write(line + "\n")
    return out


__all__ = ["CARD_FILE", "MODEL_FILE", "Predictor", "PredictorError", "PredictorModel", "build_model",
           "checkpoint_bundle", "config_predictor_class", "format_value", "fp32", "import_class", "instantiate", "load_folder",
           "predict_table", "read_inputs", "write_rows"]
