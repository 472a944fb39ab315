"""A user's data error that escapes a run, as one first line that names the file and the reason.

A data module reads its files in Lightning's hooks (``prepare_data``, ``setup``, the loaders), run
inside ``trainer.fit/test/predict``; what a reader raises there would reach the user under 40-60
lines of Lightning's frames. ``vecset`` (pipelines/cli.py ``run_cli``) asks ``data_error`` about
every exception that ends a run, so no reader needs its own try/except:

- a ``DataError`` (contracts/data_errors.py; ``DataFileError``: a file, its line or field, what
  was expected) is always the user's data, wherever it was raised;
- a ``ValueError`` (``UnicodeDecodeError`` and pandas' parser errors are ones), ``OSError`` or
  ``KeyError`` is the user's data when it was raised while a ``LightningDataModule`` or a torch
  ``Dataset`` ran (read from the traceback's frames, as ``config_errors.py`` reads a constructor's),
  or in a DataLoader worker (torch re-raises it as "Caught ValueError in DataLoader worker
  process 0", the worker's traceback in the message).

Anything else (TypeError, AttributeError, IndexError, torch's RuntimeError: bugs) keeps its
traceback, as does everything under ``JSONARGPARSE_DEBUG=true``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from vecset.contracts.data_errors import DataError
from vecset.pipelines.config_errors import DEBUG_ENV, _chain, _frames, _where

# what a reader raises about a file it cannot use; a bug raises other types
USER_TYPES = (ValueError, OSError, KeyError)
USER_TYPE_NAMES = frozenset(["ValueError", "OSError", "FileNotFoundError", "IsADirectoryError", "PermissionError",
                             "KeyError", "UnicodeDecodeError", "ParserError", "EmptyDataError", "DataError",
                             "DataFileError"])
_WORKER = re.compile(r"Caught (\w+) in DataLoader worker process \d+\.\s*\nOriginal Traceback")


@dataclass
class DataErrorReport:
    """What ``vecset`` prints: ``message`` (its first line after ``error:``), then where it was
    raised, in the hint line."""

    message: str
    kind: str  # the exception's type name
    where: str  # "TimeSeriesDataModule.setup, at vecset/pipelines/timeseries/data.py:139"

    def lines(self) -> list[str]:
        first, *rest = self.message.strip().splitlines() or [self.kind]
        return [f"error: {first}", *[f"  {r}" for r in rest[:3]],
                f"  ({self.kind} raised while {self.where}; {DEBUG_ENV}=true shows the traceback)"]


def _reading_frame(ex: BaseException) -> str | None:
    """'<DataModule>.<hook>' (or '<Dataset>.<method>') of the outermost frame of ``ex``'s traceback
    that belongs to a data module or a dataset (the hook Lightning called); None when there is none."""
    import pytorch_lightning as pl
    from torch.utils.data import Dataset

    for frame, _ in _frames(ex):
        owner = frame.f_locals.get("self")
        if isinstance(owner, (pl.LightningDataModule, Dataset)):
            return f"{type(owner).__name__}.{frame.f_code.co_name}"
    return None


def _message(ex: BaseException) -> str:
    # a KeyError's str is its key's repr: say what it is
    return f"KeyError: {ex}" if isinstance(ex, KeyError) and not isinstance(ex, DataError) else str(ex)


def data_error(ex: BaseException) -> DataErrorReport | None:
    """The user's data error that ended a run, or None when ``ex`` is not one (see the module
    docstring); the exception's causes are looked through (a reader's error re-raised by another)."""
    for e in _chain(ex):
        if isinstance(e, DataError):
            return DataErrorReport(str(e), type(e).__name__, (_reading_frame(e) or "the run was set up") + _at(e))
    m = _WORKER.match(str(ex))
    if m is not None:  # the worker's traceback is text: its last line is "<Type>: <message>"
        last = str(ex).rstrip().splitlines()[-1]
        kind, _, message = last.partition(": ")
        if m[1] in USER_TYPE_NAMES and kind.split(".")[-1] in USER_TYPE_NAMES:
            shown = last if m[1] == "KeyError" else message or kind  # a KeyError's message is its key alone
            return DataErrorReport(shown, m[1], "a DataLoader worker read the data")
        return None
    if not isinstance(ex, USER_TYPES):
        return None
    owner = _reading_frame(ex)
    if owner is None:
        return None
    return DataErrorReport(_message(ex), type(ex).__name__, owner + _at(ex))


def _at(ex: BaseException) -> str:
    frames = list(_frames(ex))
    return f", at {_where(*frames[-1])}" if frames else ""


def missing_input(config: Any, subcommand: str | None) -> str | None:
    """The first file or folder that the config's data module names (its declared
    ``input_paths``) and that does not exist, as ``data.init_args.<arg>: <path> does not exist``;
    None when all are there (or the data is not a VecsetDataModule)."""
    from jsonargparse import Namespace

    from vecset.pipelines.config_links import data_class

    data = config.get("data") if isinstance(config, Namespace) else None
    cls = data_class(data.get("class_path")) if isinstance(data, Namespace) and data.get("class_path") else None
    if cls is None:
        return None
    init_args = data.get("init_args")
    args = init_args.as_dict() if isinstance(init_args, Namespace) else {}
    from vecset.shipped import data_file

    for name, path in cls.input_paths(args, subcommand).items():
        try:  # the data modules' own resolver: from the working directory, else the shipped data
            data_file(path, f"data.init_args.{name}")
        except FileNotFoundError as ex:
            return str(ex)
    return None
