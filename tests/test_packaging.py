"""The install is one namespace: ``vecset.backbone``, ``vecset.encoders``, ``vecset.heads``,
``vecset.pipelines``, mapped from the top-level folders by pyproject's ``package-dir``."""

from __future__ import annotations

import ast
from pathlib import Path

import tomllib

import vecset

ROOT = Path(__file__).resolve().parents[1]
TOP = ("backbone", "encoders", "heads", "pipelines")


def test_every_package_folder_is_listed_in_pyproject():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    folders = {"vecset"} | {
        "vecset." + ".".join(init.parent.relative_to(ROOT).parts)
        for top in TOP for init in (ROOT / top).rglob("__init__.py")
    }
    assert folders == listed, f"pyproject packages missing {sorted(folders - listed)}, stale {sorted(listed - folders)}"
    assert cfg["package-dir"] == {"vecset": "vecset"} | {f"vecset.{t}": t for t in TOP}


def test_no_code_imports_the_bare_top_level_names():
    """``import backbone`` would load a second copy of a module beside ``vecset.backbone``
    (two classes of one name: isinstance fails), and works only from the repository root."""
    bad = []
    for folder in (*TOP, "vecset", "tests", "bench", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
                bad += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names if n.split(".")[0] in TOP]
    assert not bad, "\n".join(bad)


def test_public_api_is_one_import_away():
    from vecset.backbone import Backbone
    from vecset.pipelines import TaskModule

    assert vecset.Backbone is Backbone and vecset.TaskModule is TaskModule
    assert set(vecset.__all__) <= set(dir(vecset))
