"""The files vecset ships beside its code: the configs (``configs/``) and the small data sets
(``data/``), found the same way in a source checkout and in an installed wheel.

A wheel holds them inside the package (``vecset/configs/``, ``vecset/data/``: pyproject.toml's
package-dir maps the top-level folders there); a checkout, and an editable install of it, has
them at the top level, beside ``vecset/``. So ``vecset fit --config solubility`` runs from any
folder, and the relative paths in the shipped configs (``data/molecules/solubility.csv``) are
read from the shipped data when they do not exist from the working directory.

``vecset configs`` lists the shipped configs, one line each; ``vecset configs copy NAME [DEST]``
copies one to edit. Nothing here imports torch (the command answers at once).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def shipped_root() -> Path:
    """The folder that holds ``configs/`` and ``data/``: the package's own folder in a wheel,
    the checkout's root otherwise."""
    return _HERE if (_HERE / "configs").is_dir() else _HERE.parent


def configs_dir() -> Path:
    return shipped_root() / "configs"


def config_names() -> list[str]:
    """The shipped configs' names (``solubility`` for configs/solubility.yaml), sorted."""
    return sorted(p.stem for p in configs_dir().glob("*.yaml"))


def summary(path: Path) -> str:
    """A config's one line: its header comment's first line."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
        if line.strip():
            break
    return ""


def shipped_config(value: str) -> Path | None:
    """The shipped config that ``--config value`` names: ``solubility``, ``solubility.yaml`` or
    ``configs/solubility.yaml``; None when it names none."""
    p = Path(value)
    if p.is_absolute() or p.parent not in (Path("."), Path("configs")) or p.suffix not in ("", ".yaml"):
        return None
    found = configs_dir() / f"{p.stem}.yaml"
    return found if found.is_file() else None


def resolve_config(value: str) -> str:
    """``--config``'s value as a file to read: the file where it exists from the working
    directory, else the shipped config it names; a FileNotFoundError saying what was tried."""
    if Path(value).is_file():
        return value
    found = shipped_config(value)
    if found is not None:
        return str(found)
    raise FileNotFoundError(
        f"--config {value}: no such file ({Path(value).absolute()}) and no shipped config of that "
        f"name in {configs_dir()} (`vecset configs` lists them: {', '.join(config_names())})")


def with_shipped_configs(argv: list[str]) -> list[str]:
    """``argv`` with each ``--config``/``-c`` value replaced by the file ``resolve_config`` finds."""
    out = list(argv)
    for i, a in enumerate(out):
        if a in ("--config", "-c") and i + 1 < len(out):
            out[i + 1] = resolve_config(out[i + 1])
        elif a.startswith("--config="):
            out[i] = "--config=" + resolve_config(a.split("=", 1)[1])
    return out


def data_file(value: str | os.PathLike, setting: str) -> Path:
    """A data path a config gives (``data/molecules/solubility.csv``): the path itself where it
    exists from the working directory (or is absolute), else the shipped file of that relative
    path. ``setting`` names it in the error, which lists the places tried."""
    p = Path(value)
    if p.exists() or p.is_absolute():
        if not p.exists():
            raise FileNotFoundError(f"{setting}: {p}: no such file or folder")
        return p
    shipped = shipped_root() / p
    if shipped.exists():
        return shipped
    raise FileNotFoundError(f"{setting}: {p}: no such file or folder (tried {p.absolute()} and the shipped "
                            f"data, {shipped})")


def main(argv: list[str]) -> None:
    """``vecset configs`` (list) and ``vecset configs copy NAME [DEST]``."""
    parser = argparse.ArgumentParser(
        prog="vecset configs",
        description="The shipped configs, which `vecset fit --config NAME` runs from any folder. "
                    "`vecset configs copy NAME [DEST]` copies one to edit.")
    sub = parser.add_subparsers(dest="action")
    copy = sub.add_parser("copy", help="copy a shipped config to DEST (default: ./NAME.yaml) to edit")
    copy.add_argument("name", help="a shipped config's name (`vecset configs` lists them)")
    copy.add_argument("dest", nargs="?", help="a file or folder (default: ./NAME.yaml)")
    args = parser.parse_args(argv)
    if args.action is None:
        names = config_names()
        width = max(map(len, names))
        for name in names:
            print(f"{name:<{width}}  {summary(configs_dir() / f'{name}.yaml')}")
        return
    found = shipped_config(args.name)
    if found is None:
        sys.stderr.write(f"error: {args.name}: no shipped config of that name ({', '.join(config_names())})\n")
        raise SystemExit(2)
    dest = Path(args.dest or f"{found.stem}.yaml")
    if dest.is_dir():
        dest = dest / found.name
    if dest.exists():
        sys.stderr.write(f"error: {dest}: exists; give another DEST or remove it\n")
        raise SystemExit(2)
    shutil.copyfile(found, dest)
    print(f"{dest} (from {found}): edit it, then `vecset fit --config {dest}`")
