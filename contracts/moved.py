"""Old module paths of modules that moved, kept importable: a meta path finder under which an
old path imports as the module that now holds the code (the same module object, so a patch
through either name reaches the one code). Configs, checkpoints (their saved config and pickled
hyperparameters) and users' code name classes by module path."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

# the contracts, in backbone/ until they got a module of their own
MOVED = {
    "vecset.backbone.vectorset": "vecset.contracts.vectorset",
    "vecset.backbone.data_spec": "vecset.contracts.data_spec",
    "vecset.backbone.abilities": "vecset.contracts.abilities",
}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A meta path finder: an old path in ``moved`` (old -> new module path) imports as its new module."""

    def __init__(self, moved: dict[str, str]) -> None:
        self.moved = moved
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec) -> ModuleType:
        module = importlib.import_module(self.moved[spec.name])
        self._specs[module.__name__] = module.__spec__  # the import system sets the old spec on it next
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._specs[module.__name__]  # the module keeps its own spec (reload, pickling)


def install(moved: dict[str, str]) -> None:
    """Put a finder for ``moved`` on ``sys.meta_path`` once (per table)."""
    if not any(isinstance(f, MovedModules) and f.moved is moved for f in sys.meta_path):
        sys.meta_path.append(MovedModules(moved))
