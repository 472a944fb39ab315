"""The errors a reader raises about a user's data: ``vecset`` prints each as one ``error:`` line
(exit 2, pipelines/data_errors.py), wherever it was raised, so readers need no try/except of
their own. Here, below every package, so that encoders' readers raise them too."""

from __future__ import annotations

from pathlib import Path


class DataError(ValueError):
    """The user's data cannot be used as it is (a message naming the data and what was expected)."""


class DataFileError(DataError):
    """A data file that is not what its reader expects: ``<file>[:<line>]: <reason>``; ``line``
    is a line number or a place in the file (``tier 'phones', interval 3``)."""

    def __init__(self, file: str | Path, reason: str, line: int | str | None = None) -> None:
        self.file, self.line, self.reason = Path(file), line, reason
        super().__init__(f"{file}{'' if line is None else f':{line}'}: {reason}")


class SetTooLarge(DataError, MemoryError):
    """A set of vectors the backbone's attention cannot hold on this device (a MemoryError too)."""


class MissingDataFile(DataFileError, FileNotFoundError):
    """A data file that is not there (a ``FileNotFoundError`` too)."""
