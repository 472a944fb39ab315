"""Every test gets its own, empty vecset cache folder (``$VECSET_CACHE``), so that no test reads
what another one, or a user's run, cached (the molecule feature cache: ``encoders/graph/cache.py``)
and none writes into the home folder. Subprocesses a test starts inherit it. Module- and
session-scoped fixtures, set up before any test's own folder, share one folder of the session."""

from __future__ import annotations

import os

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs the suite in two pytest-xdist workers on a 2-core machine: one torch thread
    # each, or they oversubscribe the cores. The variable first: the CLI's subprocesses inherit
    # it, and Lightning's CPU DDP keeps a value that is set instead of choosing its own.
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="session", autouse=True)
def session_vecset_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VECSET_CACHE", str(tmp_path_factory.mktemp("vecset-cache-session")))
        yield


@pytest.fixture(autouse=True)
def own_vecset_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("VECSET_CACHE", str(tmp_path_factory.mktemp("vecset-cache")))


@pytest.fixture(scope="session", autouse=True)
def fp32_when_auto():
    """``trainer.precision: auto`` resolves to fp32 in the suite, on every machine (a CPU with bf16
    units would otherwise run it in bf16-mixed, and its seeded values would depend on the machine);
    tests/pipelines/training/test_precision.py tests the choice itself. Subprocesses inherit it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VECSET_AUTO_PRECISION", "32-true")
        yield
