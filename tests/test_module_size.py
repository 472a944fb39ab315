"""No module of the package or scripts/ is over 400 lines (issue 59: one concept a file; a file
that grows past it holds several). The package's folders are read from pyproject's package-dir,
so a new top-level folder is held too; tests/ and bench/ are not code a user imports."""

from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 400


def code_folders(root: Path = ROOT) -> list[Path]:
    """The folders pyproject maps into the ``vecset`` package, and scripts/."""
    mapped = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return sorted({root / folder for folder in mapped.values()} | {root / "scripts"})


def too_long(root: Path = ROOT, limit: int = LIMIT) -> list[str]:
    """``path: n lines`` for every .py file under the code folders with more than ``limit`` lines."""
    return [f"{p.relative_to(root)}: {n} lines" for folder in code_folders(root) for p in sorted(folder.rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > limit]


def test_the_code_folders_are_the_packages_and_scripts():
    names = {p.name for p in code_folders()}
    assert {"vecset", "contracts", "backbone", "encoders", "heads", "pipelines", "scripts"} <= names, names
    assert not names & {"tests", "bench"}


def test_a_long_file_is_found(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools]\npackage-dir = { "vecset" = "vecset", "vecset.heads" = "heads" }\n')
    for folder in ("vecset", "heads", "scripts", "bench"):
        (tmp_path / folder).mkdir()
    (tmp_path / "heads" / "long.py").write_text("x = 1\n" * 401)
    (tmp_path / "heads" / "at_the_limit.py").write_text("x = 1\n" * 400)
    (tmp_path / "bench" / "study.py").write_text("x = 1\n" * 900)  # bench/ is not held
    assert too_long(tmp_path) == ["heads/long.py: 401 lines"]


def test_no_module_is_over_400_lines():
    bad = too_long()
    assert not bad, "split these by concept (one concept a file):\n" + "\n".join(bad)
