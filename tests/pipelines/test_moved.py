"""The job folders' files and the contracts keep their old module paths (configs, checkpoints,
users' code)."""

from __future__ import annotations

import importlib

import pytest

from vecset.contracts.moved import MOVED as CONTRACTS_MOVED
from vecset.pipelines.moved import MOVED as PIPELINES_MOVED

MOVED = {**PIPELINES_MOVED, **CONTRACTS_MOVED}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_path_imports_the_module_that_moved(old):
    module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__spec__.name == MOVED[old]  # its own spec, not the alias's


def test_an_old_class_path_names_the_same_class():
    # a config's class_path before the move (imported by name, as jsonargparse does)
    old = importlib.import_module("vecset.pipelines.reports.speech").PerPhoneReport
    from vecset.pipelines.speech.reports import PerPhoneReport

    assert old is PerPhoneReport


def test_a_path_that_never_existed_is_still_an_error():
    with pytest.raises(ModuleNotFoundError, match="vecset.pipelines.data.nothing"):
        importlib.import_module("vecset.pipelines.data.nothing")
