"""The packages whose names are imported on first use (``vecset.pipelines``, ``vecset.encoders``,
``vecset.heads``: PEP 562's module ``__getattr__``, so that a shipped predictor imports no
Lightning) still give every name they list, and every ``class_path`` a config or guide names
still imports."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("package", ["vecset", "vecset.pipelines", "vecset.encoders", "vecset.heads"])
def test_every_listed_name_resolves(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
        assert name in dir(module)
        assert name in vars(module), f"{name}: imported once, then kept in {package}'s namespace"
    with pytest.raises(AttributeError, match=f"^module '{package}' has no attribute 'NoSuchName'"):
        module.NoSuchName  # noqa: B018


def test_every_class_path_in_configs_and_docs_imports():
    found: dict[str, str] = {}
    for path in sorted([*ROOT.glob("configs/*.yaml"), *ROOT.glob("docs/*.md")]):
        for name in re.findall(r"class_path:\s*([A-Za-z_][\w.]*\.[A-Za-z_]\w*)", path.read_text()):
            found.setdefault(name, path.relative_to(ROOT).as_posix())
    bad = []
    for name, where in sorted(found.items()):
        module, _, attr = name.rpartition(".")
        try:
            getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            bad.append(f"{where}: {name}: {e}")
    assert not bad, "\n".join(bad)
    assert {"vecset.pipelines.TaskModule", "vecset.encoders.GraphEncoder", "vecset.heads.SequenceHead"} <= set(found)


def test_the_cli_imports_every_pipelines_name():
    """LightningCLI resolves a short class name (``--data MoleculeDataModule``) among the
    imported subclasses: importing the CLI imports them all, as the eager package did."""
    import sys

    import vecset.pipelines
    import vecset.pipelines.cli  # noqa: F401

    for name, source in vecset.pipelines._SOURCES.items():
        assert f"vecset.pipelines.{source}" in sys.modules, name
