"""Fashion-MNIST offline: Debian's ``dataset-fashion-mnist`` package (Expat licence, about 31 MB)
holds the four idx files in /usr/share/datasets/fashion-mnist. This checks they are there and
readable (through vecset's data module: the same reader and checks as training) and prints
what they hold. With ``--install``, run as root, a missing package is installed with apt-get
(as ``make speech-corpus`` does for Festival); otherwise the message says what to install.

    python scripts/get_fashion_mnist.py --install     # make fashion-mnist
    python scripts/get_fashion_mnist.py --root DIR    # idx files of your own (.gz or not)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from vecset.pipelines.images import fashion_mnist as fm


def apt_install(package: str) -> None:
    """``apt-get install`` the package, after ``apt-get update`` when the package lists do not
    hold it (``apt-cache show`` finds nothing: a fresh machine or container has empty lists)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    known = subprocess.run(["apt-cache", "show", package], capture_output=True, text=True, env=env)
    if known.returncode != 0 or not known.stdout.strip():
        print(f"the package lists do not hold {package}: apt-get update first", file=sys.stderr)
        subprocess.run(["apt-get", "update"], check=True, env=env)
    print(f"installing the Debian package {package}", file=sys.stderr)
    subprocess.run(["apt-get", "install", "-y", package], check=True, env=env)


def ensure(root: Path, install: bool) -> dict[str, tuple[Path, Path]]:
    """The idx files under ``root``. When they are missing from the Debian package's folder
    and ``install`` is set, installs the package if this process is root and apt-get exists;
    otherwise ``SystemExit`` with the command to run and the folder searched."""
    try:
        return fm.find_files(root)
    except FileNotFoundError as e:
        missing = str(e)
    if Path(root) != Path(fm.DEFAULT_ROOT):
        raise SystemExit(missing)  # the package cannot fill another folder
    if install and os.geteuid() == 0 and shutil.which("apt-get"):
        apt_install(fm.DEBIAN_PACKAGE)
        return fm.find_files(root)
    raise SystemExit(f"{missing}\nInstall it with:\n  sudo apt-get install {fm.DEBIAN_PACKAGE}")


def summary(files: dict[str, tuple[Path, Path]]) -> str:
    """What the files hold, read with the data module's reader (its errors name a bad file)."""
    parts = []
    for split, (images, labels) in files.items():
        x, y = fm.read_split(images, labels)
        parts.append(f"{split}: {len(y)} images of {x.shape[2]}x{x.shape[3]} ({images.name}), "
                     f"{len(set(y.tolist()))} classes")
    return "; ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(fm.DEFAULT_ROOT), help="folder of the four idx files")
    ap.add_argument("--install", action="store_true",
                    help=f"apt-get install {fm.DEBIAN_PACKAGE} when missing (needs root)")
    args = ap.parse_args()
    files = ensure(args.root, args.install)
    print(f"Fashion-MNIST in {args.root}: {summary(files)}")


if __name__ == "__main__":
    main()
