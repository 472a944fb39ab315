"""Build the docs site offline: the guides, the README as home page, and the API reference.

The guides link to files outside docs/ (the README, bench/results/*.json, bench/logs/,
data/README.md), so they are staged with those files into one tree, laid out as in the
repository, and MkDocs builds that tree with the repository's mkdocs.yml. mkdocstrings reads the
docstrings of the checkout's code laid out as the wheel installs it (pyproject.toml's package-dir:
backbone/ becomes vecset/backbone/), which griffe, reading files, finds by path. ``--strict`` (the default) turns every warning, a broken link
or an unresolvable API name, into an error.

    python scripts/build_docs.py [--site-dir site] [--no-strict]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
# what the site holds, as paths of the repository (folders copied whole)
STAGED = ["README.md", "BENCHMARKS.md", "docs", "data/README.md", "bench/logs", "bench/results"]


def stage(dest: Path) -> None:
    for rel in STAGED:
        src = ROOT / rel
        if not src.exists():
            raise FileNotFoundError(f"{src} is missing: the docs site stages {', '.join(STAGED)}")
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            # the ablation study's per-run records are many and linked from no page
            shutil.copytree(src, target, ignore=shutil.ignore_patterns("runs", "tmp", "*.pyc"))
        else:
            shutil.copy2(src, target)


# a wide command scrolls inside its block rather than running off the page
SCROLL_CSS = ".highlight pre { overflow-x: auto; white-space: pre; }\n.highlight pre code { white-space: pre; }\n"


def stage_css(dest: Path) -> None:
    """``css/code.css`` (mkdocs.yml's extra_css): the Pygments style of the code blocks
    (pymdownx.highlight writes its classes) and their sideways scrolling."""
    from pygments.formatters import HtmlFormatter

    (dest / "css").mkdir(parents=True, exist_ok=True)
    (dest / "css" / "code.css").write_text(HtmlFormatter(style="default").get_style_defs(".highlight") + "\n"
                                           + SCROLL_CSS)


def stage_package(dest: Path) -> Path:
    """The checkout's Python files under ``dest`` as the installed package has them
    (``vecset.backbone`` -> ``dest/vecset/backbone``); ``dest``."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for name, folder in mapping.items():
        target = dest.joinpath(*name.split("."))
        for py in (ROOT / folder).rglob("*.py"):
            rel = py.relative_to(ROOT / folder)
            if name == "vecset" and rel.parts[0] in {n.split(".")[1] for n in mapping if "." in n}:
                continue
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(py, target / rel)
    return dest


def build(site_dir: Path, strict: bool = True) -> Path:
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    with tempfile.TemporaryDirectory(prefix="vecset-docs-") as tmp:
        src = Path(tmp) / "src"
        stage(src)
        stage_css(src)
        package = stage_package(Path(tmp) / "package")
        text = (ROOT / "mkdocs.yml").read_text()
        if "paths: [.]" not in text:
            raise ValueError("mkdocs.yml: the python handler's `paths: [.]` was expected (it is replaced by the staged package)")
        (Path(tmp) / "mkdocs.yml").write_text(text.replace("paths: [.]", f"paths: [{package}]", 1))
        config = load_config(str(Path(tmp) / "mkdocs.yml"), docs_dir=str(src), site_dir=str(site_dir.resolve()),
                             strict=strict)
        mkdocs_build(config)
    return site_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site-dir", type=Path, default=ROOT / "site")
    parser.add_argument("--no-strict", action="store_true", help="report warnings without failing")
    args = parser.parse_args()
    logging.basicConfig(format="%(levelname)s %(message)s", level=logging.INFO)
    site = build(args.site_dir, strict=not args.no_strict)
    print(f"site: {site / 'index.html'}")


if __name__ == "__main__":
    main()
