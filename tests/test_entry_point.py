"""The installed ``vecset`` command sets ``OMP_WAIT_POLICY=PASSIVE`` before torch is imported
(libgomp reads it once, when torch loads it), unless the user set it: with two threads on a
machine where another process holds a core, OpenMP's spinning threads make a fit several
times slower (issue #27; ``bench/omp_wait.py`` measures it). ``import vecset`` imports no torch, so that the
command's module can run first; the public names still load on first use."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

# the child loads the console script's entry point the way the installed ``vecset`` script
# does (``from <module> import main``) and calls it, with a spy that prints the variable at
# ``import torch`` and ends the child there (that the command then runs the CLI is tested below)
CHILD = """
import importlib.abc, importlib.metadata, os, sys

class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            print("at import torch: OMP_WAIT_POLICY =", os.environ.get("OMP_WAIT_POLICY"), flush=True)
            os._exit(0)
        return None

sys.meta_path.insert(0, Spy())
(ep,) = importlib.metadata.entry_points(group="console_scripts", name="vecset")
main = ep.load()
print("torch imported by loading", ep.value, ":", "torch" in sys.modules, flush=True)
sys.argv = ["vecset", "fit", "--config", "debug"]
main()
print("main() returned without importing torch", flush=True)
"""


def command(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}  # the Makefile exports it
    if env_value is not None:
        env["OMP_WAIT_POLICY"] = env_value
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


@pytest.mark.parametrize(("given", "seen"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")], ids=["unset", "user's own"])
def test_the_command_sets_the_wait_policy_before_torch_loads(given, seen):
    out = command(given)
    assert re.search(r"^torch imported by loading \S+ : False$", out, re.M), out[:500]  # no torch yet
    assert f"at import torch: OMP_WAIT_POLICY = {seen}\n" in out, out[:500]


def test_the_command_runs_the_cli(monkeypatch):
    import vecset.command
    import vecset.pipelines.cli

    calls = []
    monkeypatch.setattr(vecset.pipelines.cli, "run_cli", lambda: calls.append(sys.argv[1:]))
    monkeypatch.setattr(sys, "argv", ["vecset", "fit", "--config", "debug"])
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    vecset.command.main()
    assert calls == [["fit", "--config", "debug"]] and os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_help_answers_without_torch_and_names_every_subcommand():
    """`vecset --help` is the command's own text (LightningCLI's needs Lightning and every class:
    10 s): it imports no torch, and lists LightningCLI's subcommands and vecset's."""
    code = ("import sys; from vecset.command import main; sys.argv = ['vecset', '--help']\n"
            "try:\n    main()\nexcept SystemExit as e:\n    print('exit', e.code, 'torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines()[-1] == "exit 0 False"
    from pytorch_lightning.cli import LightningCLI

    from vecset.command import SUBCOMMANDS

    names = [*LightningCLI.subcommands(), *SUBCOMMANDS]
    assert r.stdout.startswith(f"usage: vecset [-h] {{{','.join(names)}}} ...\n")
    for name in names:
        assert re.search(rf"^    {name} +\S", r.stdout, re.M), name


def test_import_vecset_imports_no_torch_and_from_imports_still_work():
    r = subprocess.run([sys.executable, "-c", "import sys, vecset; print('torch' in sys.modules)"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["False"]
    from vecset import VectorSet  # through the module's __getattr__ too

    assert VectorSet.__module__ == "vecset.contracts.vectorset"


def test_every_public_name_loads_from_its_sub_package():
    import vecset

    for name in vecset.__all__:
        obj = getattr(vecset, name)
        assert obj.__module__.startswith(f"vecset.{vecset._SOURCES[name]}."), (name, obj.__module__)
    assert set(vecset.__all__) == set(vecset._SOURCES) and set(vecset.__all__) <= set(dir(vecset))
    assert vecset.pipelines is sys.modules["vecset.pipelines"]


def test_an_unknown_name_is_an_attribute_error():
    import vecset

    with pytest.raises(AttributeError, match="module 'vecset' has no attribute 'Transformer'"):
        vecset.Transformer  # noqa: B018


# a run's config parsed in a fresh process: which job folders' code it imported
JOBS_IMPORTED = """
import json, sys
from pathlib import Path
from vecset.pipelines.cli import run_cli
root, extra = Path(sys.argv[1]), sys.argv[2:]
sys.argv = sys.argv[:1]
cli = run_cli(["--config", str(root / "configs/debug.yaml"), *extra], run=False)
jobs = {p.name for p in (root / "pipelines").iterdir() if p.is_dir() and (p / "__init__.py").is_file()} - {
    "data", "export", "predict", "reports", "training"}
print(json.dumps([type(cli.datamodule).__name__, sorted({m.split(".")[2] for m in sys.modules
                  if m.startswith("vecset.pipelines.") and m.split(".")[2] in jobs})]))
"""


@pytest.mark.parametrize(("extra", "jobs"), [([], []), (["--data", "SyntheticSetDataModule"], "all")],
                         ids=["full class paths", "a short class name"])
def test_a_run_imports_its_own_jobs_code_only(extra, jobs, tmp_path):
    """The debug config names its classes by path: no job folder's code is imported (the command
    starts faster); a class given by its short name makes every job's classes known to LightningCLI."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-c", JOBS_IMPORTED, str(root), *extra], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    data_class, imported = json.loads(r.stdout.strip().splitlines()[-1])
    assert data_class == "SyntheticSetDataModule"
    if jobs == "all":
        assert {"molecules", "speech", "timeseries", "images"} <= set(imported)
    else:
        assert imported == jobs
