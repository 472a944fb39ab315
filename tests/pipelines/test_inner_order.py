"""The inner order of pipelines/, as tests/test_layers.py holds the top level's: a module imports
only modules of its own layer's folder or of layers below it, and jobs never import each other.

From the top (under ``vecset/command.py``, the dispatcher): the subcommands that build
on the LightningCLI (``export/``, ``ensemble.py``); the LightningCLI (``cli.py``); the jobs (one
folder each: its data module, prediction output, reports, checks); the generic ``predict/`` and
``reports/`` (they read trained models: above ``training/``); ``training/`` with the config links;
the generic ``data/`` (the data module contract, loaders, samplers); the utilities. Imports inside
functions count (a circle through a function-level import is still a circle).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIPELINES = ROOT / "pipelines"
# place (a folder or a module of pipelines/) -> its layer; higher layers may import lower ones
GENERIC = {
    "export": 6, "ensemble": 6, "pretrained": 6,
    "cli": 5, "pack": 5,
    "predict": 3, "reports": 3, "data_errors": 3, "predictor": 3,
    "training": 2, "config_links": 2,
    "data": 1,
    "console": 0, "signals": 0, "config_errors": 0,
}


def found_jobs(root: Path) -> tuple[str, ...]:
    """The jobs: every folder of ``root`` with Python files that is not a generic layer (a new
    job's folder joins without an edit here)."""
    return tuple(sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in GENERIC and any(p.glob("*.py"))))


JOBS = found_jobs(PIPELINES)
LAYERS = {**GENERIC, **{job: 4 for job in JOBS}}


def place(module: str) -> str | None:
    """``vecset.pipelines.speech.data`` -> ``speech``; None outside vecset.pipelines (or the package itself)."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["vecset", "pipelines"] and len(parts) > 2 else None


def edges(root: Path = PIPELINES) -> list[tuple[str, int, str, str]]:
    """(file, line, its place, the imported place) for every import of another place of pipelines/."""
    out = []
    for path in root.rglob("*.py"):
        if path == root / "__init__.py":
            continue  # the package's facade re-exports every layer's public names
        here = path.relative_to(root).parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            for name in names:
                there = place(name)
                if there is not None and there != here:
                    out.append((path.relative_to(root).as_posix(), node.lineno, here, there))
    return out


def test_every_place_of_pipelines_has_a_layer():
    places = {p.relative_to(PIPELINES).parts[0].removesuffix(".py") for p in PIPELINES.rglob("*.py")} - {"__init__"}
    assert places == set(LAYERS), (sorted(places - set(LAYERS)), sorted(set(LAYERS) - places))
    assert {"speech", "molecules", "images", "text", "graphs", "kernel_regression"} <= set(JOBS)


def test_a_new_job_folder_is_a_job_without_an_edit_here(tmp_path):
    """A fifth job's folder is found (layer 4), and may not import another job."""
    (tmp_path / "points").mkdir()
    (tmp_path / "points" / "data.py").write_text("from vecset.pipelines.speech.data import feature_count\n")
    (tmp_path / "speech").mkdir()
    (tmp_path / "speech" / "data.py").write_text("")
    jobs = found_jobs(tmp_path)
    assert jobs == ("points", "speech")
    assert upward(tmp_path, {**GENERIC, **{j: 4 for j in jobs}}) == [
        "pipelines/points/data.py:1: points (layer 4) imports speech (layer 4)"]


def upward(root: Path = PIPELINES, layers: dict[str, int] | None = None) -> list[str]:
    layers = LAYERS if layers is None else layers
    return [f"pipelines/{f}:{line}: {here} (layer {layers[here]}) imports {there} (layer {layers[there]})"
            for f, line, here, there in edges(root) if layers[there] >= layers[here]]


def test_pipelines_imports_point_down():
    bad = upward()
    assert not bad, "\n".join(bad)


def test_the_check_finds_a_function_level_import_up_and_one_job_importing_another(tmp_path):
    """cli <-> export/command was a circle through a function-level import."""
    (tmp_path / "cli.py").write_text("def main():\n    from vecset.pipelines.export.command import main\n")
    (tmp_path / "speech").mkdir()
    (tmp_path / "speech" / "data.py").write_text("from vecset.pipelines.molecules.data import MoleculeDataModule\n")
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "command.py").write_text("from vecset.pipelines.cli import run_cli\n")
    assert sorted(upward(tmp_path)) == ["pipelines/cli.py:2: cli (layer 5) imports export (layer 6)",
                                        "pipelines/speech/data.py:1: speech (layer 4) imports molecules (layer 4)"]
