"""Reading plain text files that any modality's reader may use: UTF-8 text and lines, and CSV rows,
so that a bad byte or a ragged row is reported with its file and line.

Python's own decoding (``open(path, encoding="utf-8")``, pandas' ``read_csv``) raises a
``UnicodeDecodeError`` that names a position in a buffer, not the file or its line.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas: imported where a table is built (a second to import; a predictor's start)
    import pandas as pd


def read_utf8(path: str | Path) -> str:
    """The file's text, without a leading byte-order mark (spreadsheets write one). Invalid
    UTF-8 is a ValueError ``path:line: not valid UTF-8 (byte 0x.. at column c)``; line and
    column (in bytes) are 1-based."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ValueError(f"{path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at column {column}: "
                         f"{e.reason}); save the file as UTF-8") from None
    return text.removeprefix("\ufeff")


def read_utf8_lines(path: str | Path) -> list[str]:
    """``read_utf8``'s text split into lines as ``open()`` in text mode splits them (``\\n``,
    ``\\r\\n`` or ``\\r``; not ``str.splitlines``' form feeds and Unicode separators), without
    their line ends. Line ``n`` of the file is item ``n - 1``."""
    return [line.rstrip("\n") for line in io.StringIO(read_utf8(path), newline=None)]


def read_csv_rows(path: str | Path) -> tuple[pd.DataFrame, list[int]]:
    """The data rows of a CSV file as strings, and the line each row starts on.

    Read with the ``csv`` module rather than ``pandas.read_csv``, which drops blank lines
    without counting them (every later row's line number would be off) and renames a
    duplicate column (``expt``, ``expt.1``). Blank lines are skipped but counted; duplicate
    column names, a row with another number of fields than the header and invalid UTF-8 are
    ValueErrors naming the file and line.
    """
    reader = csv.reader(io.StringIO(read_utf8(path), newline=""))
    header: list[str] | None = None
    header_line, start = 0, 1
    rows, lines = [], []
    try:
        for record in reader:
            if record:  # a blank line reads as []
                if header is None:
                    header, header_line = record, start
                    # unnamed columns (a spreadsheet's trailing commas) cannot be selected: not duplicates
                    dup = sorted({c for c in header if c and header.count(c) > 1})
                    if dup:
                        where = ", ".join(str(i + 1) for i, c in enumerate(header) if c in dup)
                        raise ValueError(f"{path}:{start}: duplicate column name(s) {dup} (columns {where}); "
                                         "each column needs its own name")
                elif len(record) != len(header):
                    n = len(record)
                    raise ValueError(f"{path}:{start}: {n} field{'s' if n != 1 else ''}, the header (line "
                                     f"{header_line}) has {len(header)}: {record}")
                else:
                    rows.append(record)
                    lines.append(start)
            start = reader.line_num + 1  # a quoted field may span lines
    except csv.Error as e:
        raise ValueError(f"{path}:{reader.line_num}: {e}") from None
    if header is None:
        raise ValueError(f"{path}: empty file (expected a header line of column names)")
    import pandas as pd

    return pd.DataFrame(rows, columns=header, dtype=str), lines
