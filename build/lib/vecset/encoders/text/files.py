"""Reading a UTF-8 text file so that a bad byte is reported with its file, line and column.

Python's own decoding (``open(path, encoding="utf-8")``, pandas' ``read_csv``) raises a
``UnicodeDecodeError`` that names a position in a buffer, not the file or its line.
"""

from __future__ import annotations

import io
from pathlib import Path


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
