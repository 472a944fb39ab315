"""Reading a checkpoint file safely: ``torch.load(weights_only=True)``, and one clear error when a
file is not a checkpoint (empty, truncated, another format) or would run code when unpickled.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import zipfile

import torch
from fsspec.core import url_to_fs
from lightning_fabric.utilities.cloud_io import _is_local_file_protocol, get_filesystem


class NotACheckpointError(ValueError):
    """A file given as a checkpoint that is not one."""


class UnsafeCheckpointError(ValueError):
    """A checkpoint that ``torch.load(weights_only=True)`` refused: unpickling it would run code."""


def unsafe_checkpoint_error(path, e: pickle.UnpicklingError) -> UnsafeCheckpointError:
    """The refusal, naming the file and the global torch would not import. torch's own text
    also advises re-running with ``weights_only=False``, i.e. running the file's code: that
    advice is left out."""
    found = re.search(r"GLOBAL (\S+)", str(e))  # "Unsupported global: GLOBAL io.open was not ..."
    what = f" (it refers to {found.group(1)}, which a checkpoint has no need of)" if found else ""
    return UnsafeCheckpointError(
        f"{path} was refused on purpose: loading it would run code stored in the file{what}. vecset "
        "loads checkpoints with torch.load(weights_only=True), which admits tensors and plain data only; "
        "the checkpoints vecset writes hold nothing else, so this file was written by other code or altered.")


def _not_a_torch_file(f: str | io.BytesIO, size: int) -> str | None:
    """Why ``f`` (a path or the bytes) cannot be a ``torch.save`` file, or None."""
    if size == 0:
        return "the file is empty (0 bytes)"
    if not zipfile.is_zipfile(f):
        if isinstance(f, io.BytesIO):
            f.seek(0)
            head = f.read(16)
        else:
            with open(f, "rb") as fh:
                head = fh.read(16)
        return (f"not a zip archive, which torch.save writes (a truncated copy, another format, or PyTorch "
                f"< 1.6's legacy format?); {size} bytes beginning {head!r}")
    with zipfile.ZipFile(f) as z:
        if not any(n == "data.pkl" or n.endswith("/data.pkl") for n in z.namelist()):
            return f"a zip archive without torch.save's data.pkl (it holds {sorted(z.namelist())[:3]})"
    return None


def read_checkpoint(path: str | os.PathLike) -> dict:
    """A Lightning checkpoint's contents, loaded with ``torch.load(weights_only=True)`` (no
    code from the file runs). A local path or ``file://`` URL is memory-mapped (tensors are
    mapped, not read); another fsspec URL (``s3://``...) is read through fsspec, as Lightning
    reads it. Raises ``NotACheckpointError`` naming the file and what it is instead, and
    ``UnsafeCheckpointError`` for a file whose unpickling would run code."""
    url = str(path)
    if _is_local_file_protocol(url):
        local = url_to_fs(url)[1]  # file:///x -> /x
        problem = _not_a_torch_file(local, os.path.getsize(local))
        source: str | io.BytesIO = local
    else:
        with get_filesystem(url).open(url, "rb") as f:
            source = io.BytesIO(f.read())
        problem = _not_a_torch_file(source, len(source.getvalue()))
        source.seek(0)
    if problem:
        raise NotACheckpointError(f"{url} is not a PyTorch checkpoint: {problem}")
    try:
        ckpt = torch.load(source, map_location="cpu", weights_only=True, mmap=isinstance(source, str))
    except pickle.UnpicklingError as e:
        raise unsafe_checkpoint_error(url, e) from None  # torch's text advises running the code
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt:
        what = f"a dict with keys {sorted(ckpt)[:6]}" if isinstance(ckpt, dict) else f"a {type(ckpt).__name__}"
        raise NotACheckpointError(f"{url} is a PyTorch file but not a Lightning checkpoint: it holds {what}, "
                                  "no 'state_dict'")
    return ckpt


def is_checkpoint_file(path: str) -> bool:
    """``path`` (a local path or an fsspec URL) names an existing file."""
    fs, local = url_to_fs(path)
    return bool(fs.isfile(local))
