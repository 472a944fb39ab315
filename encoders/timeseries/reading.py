"""Reading a time-series classification folder: one CSV file per series (a header naming the
channels, one row per time step, any number of rows) and a ``labels.csv`` (``file,label`` and
an optional ``split`` column: train, val or test).

Every error's first line names the file, and the line and column where there is one, and says
what was expected: a series must be a rectangle of finite numbers under the one header every
file of the folder shares.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from vecset.contracts.data_errors import DataFileError, MissingDataFile

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class LabelRow:
    """One row of ``labels.csv``: the series file (relative to the folder), its label, its split
    (``None`` where the file has no ``split`` column) and the row's line number, for messages."""

    file: str
    label: str
    split: str | None
    line: int


def read_labels(path: Path) -> list[LabelRow]:
    """The rows of ``labels.csv`` (columns ``file``, ``label``, optional ``split``)."""
    if not path.is_file():
        raise MissingDataFile(path, "labels file not found (expected a CSV with columns file,label[,split] "
                                "beside the series files)")
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = [h.strip() for h in next(reader, [])]
        if header[:2] != ["file", "label"] or header[2:] not in ([], ["split"]):
            raise DataFileError(path, f"header {header} (expected file,label or file,label,split)", 1)
        rows, seen = [], {}
        for line, row in enumerate(reader, start=2):
            if not any(cell.strip() for cell in row):
                continue  # a blank line
            if len(row) != len(header):
                raise DataFileError(path, f"{len(row)} values, the header has {len(header)} ({','.join(header)})", line)
            file, label = row[0].strip(), row[1].strip()
            split = row[2].strip() if len(header) == 3 else None
            if not file or not label:
                raise DataFileError(path, f"an empty {'file' if not file else 'label'} (every row names a series "
                                    "file and its label)", line)
            if split is not None and split not in SPLITS:
                raise DataFileError(path, f"column split: {split!r} (expected one of {', '.join(SPLITS)})", line)
            if file in seen:
                raise DataFileError(path, f"{file} is listed again (first on line {seen[file]})", line)
            seen[file] = line
            rows.append(LabelRow(file, label, split, line))
    if not rows:
        raise DataFileError(path, "no rows under the header (expected one row per series file)")
    return rows


def read_header(path: Path) -> list[str]:
    """The channel names of a series file (its first line)."""
    if not path.is_file():
        raise MissingDataFile(path, "series file not found")
    with open(path, newline="") as f:
        header = next(csv.reader(f), None)
    names = [h.strip() for h in header or []]
    if not names or any(not n for n in names):
        raise DataFileError(path, f"the header must name every channel (got {header!r})", 1)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise DataFileError(path, f"channel names repeat: {dup}", 1)
    return names


def read_series(path: Path, channels: list[str] | None = None) -> tuple[Tensor, list[str]]:
    """One series: its values (T, C) float32 and its channel names. ``channels``: the names the
    folder's first file gave, which this file's header must repeat (same names, same order).

    Shapes:
        returns (T, C) float32, T >= 1 time steps of C channels
    """
    names = read_header(path)
    if channels is not None and names != channels:
        raise DataFileError(path, f"channels {names} differ from the other files' {channels} (every series names "
                            "the same channels in the same order)", 1)
    values: list[list[float]] = []
    with open(path, newline="") as f:
        reader = csv.reader(f)
        next(reader)
        for line, row in enumerate(reader, start=2):
            if not row:
                continue  # a blank line (e.g. at the end)
            if len(row) != len(names):
                raise DataFileError(path, f"{len(row)} values, the header names {len(names)} channels (every row is "
                                    "one time step with a value per channel)", line)
            step = []
            for name, cell in zip(names, row, strict=True):
                try:
                    v = float(cell)
                except ValueError:
                    raise DataFileError(path, f"column {name}: {cell!r} is not a number", line) from None
                if not math.isfinite(v):
                    raise DataFileError(path, f"column {name}: {cell.strip()} is not a finite number (NaN and infinity "
                                        "are not values a model can read; fill or drop them)", line)
                step.append(v)
            values.append(step)
    if not values:
        raise DataFileError(path, "an empty series (a header and no rows); every series needs at least one time step")
    return torch.tensor(values, dtype=torch.float32), names


def class_names_of(rows: list[LabelRow]) -> list[str]:
    """The classes a model learns: the labels of the training rows (every row where the file has
    no split column; else the ``train`` rows), sorted."""
    train = [r for r in rows if r.split in (None, "train")]
    return sorted({r.label for r in train})
