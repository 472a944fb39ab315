"""Reading idx files (MNIST's format: a magic number, sizes, then the bytes), gzipped or not, with torchvision's reader, and a split's images and labels together; a wrong magic number, a truncated file, a count that does not match or a label out of range names the file."""

from __future__ import annotations

import gzip
import os
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from torch import Tensor

# idx magic numbers (LeCun's format: 0x0000, type 0x08 = unsigned byte, number of dimensions)
IDX_MAGIC = {"images": 0x00000803, "labels": 0x00000801}


@contextmanager
def bytes_as_path(data: bytes) -> Iterator[str]:
    """``data`` as a file path, for readers that open a path: an anonymous in-memory file
    where the OS has one (Linux memfd), otherwise a temporary file deleted afterwards."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("vecset-idx")
        try:
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "file.idx"
        path.write_bytes(data)
        yield str(path)


def read_idx(path: str | Path, kind: Literal["images", "labels"]) -> Tensor:
    """An idx file (gzip-compressed when it ends in ``.gz``) read by torchvision's reader.

    Returns (N, H, W) uint8 images or (N,) int64 labels. A broken gzip stream, a wrong magic
    number (not an idx file of unsigned bytes of this kind) or a length that does not match
    the header's sizes (a truncated file) is a ``ValueError`` naming the file.
    """
    from torchvision.datasets.mnist import read_image_file, read_label_file

    path = Path(path)
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise ValueError(f"{path}: not a complete gzip file ({type(e).__name__}: {e}); replace the "
                             "file (or reinstall the package that ships it)") from e
    want = IDX_MAGIC[kind]
    have = int.from_bytes(data[:4], "big") if len(data) >= 4 else None
    if have != want:
        got = f"{have:#010x}" if have is not None else f"only {len(data)} bytes"
        raise ValueError(f"{path}: not an idx {kind} file: magic number {got}, expected {want:#010x} "
                         f"(unsigned bytes, {3 if kind == 'images' else 1} dimension(s))")
    reader = read_image_file if kind == "images" else read_label_file
    with bytes_as_path(data) as p:
        try:
            return reader(p)
        except (RuntimeError, ValueError, TypeError, AssertionError) as e:
            raise ValueError(f"{path}: truncated or malformed idx {kind} file: {len(data)} bytes do not hold "
                             f"the sizes its header gives ({type(e).__name__}: {e})") from e


def read_idx_split(images_path: str | Path, labels_path: str | Path, num_classes: int,
                   name: str = "the dataset") -> tuple[Tensor, Tensor]:
    """One split of an idx dataset (MNIST's layout: an images file and a labels file):
    (N, 1, H, W) uint8 images and (N,) int64 labels in 0..num_classes-1. Image and label
    counts that differ, or a label out of range, is a ValueError naming the files."""
    images, labels = read_idx(images_path, "images"), read_idx(labels_path, "labels")
    if len(images) != len(labels):
        raise ValueError(f"{images_path} holds {len(images)} images but {labels_path} holds {len(labels)} labels; "
                         "the two files must come from the same split")
    if len(labels) and int(labels.max()) >= num_classes:
        raise ValueError(f"{labels_path}: label {int(labels.max())} is out of range ({name} has "
                         f"{num_classes} classes, 0..{num_classes - 1})")
    return images[:, None], labels
