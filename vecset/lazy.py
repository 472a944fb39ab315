"""Names a package imports on first use (PEP 562's module ``__getattr__``), so that importing
it imports none of its modules: ``import vecset`` imports no torch, and a shipped predictor
that reads molecules imports no speech, image or Lightning code."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_names(package: str, sources: dict[str, str],
               subpackages: tuple[str, ...] = ()) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: a name in ``sources`` is imported from
    the module ``package.<sources[name]>`` at its first use and then kept in the package's
    namespace (later lookups do not come here); a name in ``subpackages`` is that sub-package."""

    def __getattr__(name: str) -> object:
        if name in sources:
            value = getattr(importlib.import_module(f"{package}.{sources[name]}"), name)
        elif name in subpackages:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *sources, *subpackages})

    return __getattr__, __dir__
