"""The install is one namespace: ``vecset.backbone``, ``vecset.encoders``, ``vecset.heads``,
``vecset.pipelines``, the top-level folders linked into ``vecset/``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tomllib

import vecset

ROOT = Path(__file__).resolve().parents[1]
TOP = ("contracts", "backbone", "encoders", "heads", "pipelines")


def test_the_top_level_folders_are_linked_into_the_namespace():
    """vecset/backbone is the folder backbone/ (a relative link, so a clone anywhere works),
    and pyproject finds the packages under vecset/ instead of mapping folders by hand."""
    for top in TOP:
        link = ROOT / "vecset" / top
        assert link.is_symlink() and Path(link.readlink()) == Path("..") / top, link
        assert link.resolve() == (ROOT / top).resolve()
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert cfg["packages"]["find"]["include"] == ["vecset", "vecset.*"] and "package-dir" not in cfg


def static_target(module: str) -> Path | None:
    """The file ``import module`` reads, found in the tree alone (no import, no install):
    ``vecset/a/b.py`` or ``vecset/a/b/__init__.py``."""
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def test_a_static_reader_resolves_every_vecset_import():
    """What an editor or a layering checker does without the editable install: every
    ``vecset.`` import in the project (packages, tests, bench, scripts) names a file of the
    tree, and a name imported from a package is a module there or defined in its __init__."""
    bad, seen = [], 0
    for folder in (*TOP, "vecset", "tests", "bench", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    mods = [node.module]
                else:
                    continue
                for mod in mods:
                    if mod.split(".")[0] != "vecset":
                        continue
                    seen += 1
                    if static_target(mod) is None:
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {mod}")
    assert seen > 300, seen  # the walk saw the project's imports
    assert not bad, "\n".join(bad)


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


def shown_class_paths() -> dict[str, list[str]]:
    """Every ``class_path:`` value the project shows its users: in configs/, the guides
    (docs/, README.md, BENCHMARKS.md) and the packages' docstrings -> where it is shown."""
    found: dict[str, list[str]] = {}
    pattern = re.compile(r"class_path[\"']?\s*:\s*[\"']?([A-Za-z_][\w.]*)")

    def scan(text: str, where: str) -> None:
        for m in pattern.finditer(text):
            found.setdefault(m.group(1), []).append(where)

    for path in [*(ROOT / "configs").glob("*.yaml"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md",
                 ROOT / "BENCHMARKS.md"]:
        scan(path.read_text(), str(path.relative_to(ROOT)))
    for folder in (*TOP, "vecset"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    scan(ast.get_docstring(node) or "", f"{path.relative_to(ROOT)} ({getattr(node, 'name', 'module')})")
    return found


def test_every_class_path_shown_resolves():
    """A class_path in a guide, config or docstring that no longer imports (StepCheckpoint's
    docstring showed pipelines.StepCheckpoint, from before the vecset. namespace: a bare
    top-level name imports only from the repository root, so it counts as unresolved)."""
    import importlib

    found = shown_class_paths()
    assert "vecset.pipelines.StepCheckpoint" in found and "vecset.pipelines.TaskModule" in found
    bad = []
    for path, where in sorted(found.items()):
        module, _, name = path.rpartition(".")
        try:
            ok = bool(module) and path.split(".")[0] not in TOP and hasattr(importlib.import_module(module), name)
        except ImportError:
            ok = False
        if not ok:
            bad.append(f"{path} (shown in {', '.join(sorted(set(where)))})")
    assert not bad, "class paths that do not resolve:\n" + "\n".join(bad)
