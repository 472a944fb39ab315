"""The fixed Fashion-MNIST test slice shipped in the repository (data/fashion_mnist/): the first
500 images of the official test set (``t10k``) with their labels, from Debian's
``dataset-fashion-mnist`` (Expat licence), so that the shipped ``fashion_mnist`` predictor's
card test (tests/pipelines/test_pretrained.py) runs without the package.

    python scripts/make_fashion_slice.py [--root /usr/share/datasets/fashion-mnist]

Writes ``t10k_first500.npz``: ``images`` (500, 28, 28) uint8 (the idx file's bytes, light
clothes on black), ``labels`` (500,) uint8 in 0..9 (torchvision's ``FashionMNIST.classes``
order), and prints its sha256.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "data" / "fashion_mnist" / "t10k_first500.npz"
COUNT = 500


def main(argv: list[str] | None = None) -> Path:
    from vecset.pipelines.images.fashion_mnist import DEFAULT_ROOT, find_files, read_split

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=DEFAULT_ROOT, help="the folder of the four idx files")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    images, labels = read_split(*find_files(args.root)["test"])  # (N, 1, 28, 28) uint8, (N,) int64
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, images=images[:COUNT, 0].numpy(), labels=labels[:COUNT].numpy().astype(np.uint8))
    print(f"{args.out}: {COUNT} images, {args.out.stat().st_size} bytes, sha256 "
          f"{hashlib.sha256(args.out.read_bytes()).hexdigest()}")
    return args.out


if __name__ == "__main__":
    main()
