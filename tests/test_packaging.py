"""The install is one namespace, ``vecset.*``, mapped from the project's top-level folders
(pyproject.toml's package-dir: ``vecset.backbone`` is backbone/, no links in the tree); one
public path per class; the shipped configs and data travel with the package. A wheel built
from the tree and installed into a fresh venv runs jobs by config name from another folder."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

import vecset

ROOT = Path(__file__).resolve().parents[1]
TOP = ("contracts", "backbone", "encoders", "heads", "pipelines")
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
# the pipelines/ folders that are generic machinery, not jobs
GENERIC = {"data", "export", "predict", "reports", "training"}


def test_the_top_level_folders_are_mapped_into_the_namespace():
    """No links: vecset/ holds the package's own modules, pyproject maps each top-level folder
    to its vecset.* name and lists every package (setuptools takes them by name)."""
    assert not [p for p in (ROOT / "vecset").iterdir() if p.is_symlink()]
    assert SETUPTOOLS["package-dir"] == {"vecset": "vecset", **{f"vecset.{t}": t for t in (*TOP, "configs", "data")}}
    found = {"vecset", "vecset.configs", "vecset.data"} | {
        ".".join(("vecset", *init.parent.relative_to(ROOT).parts)) for t in TOP for init in (ROOT / t).rglob("__init__.py")}
    assert sorted(SETUPTOOLS["packages"]) == sorted(found)


def test_a_checkout_imports_its_own_code_without_an_install():
    """A clone on PYTHONPATH, from another folder: every layer is this checkout's folder, also
    where the environment holds an editable install of another checkout (its finder comes after
    PYTHONPATH)."""
    code = ("import importlib.util, vecset.backbone, vecset.shipped as s; print(vecset.backbone.__file__); "
            "print(importlib.util.find_spec('vecset.pipelines.speech.data').origin); print(s.shipped_root())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       cwd=Path("/"), env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == [str(ROOT / "backbone/__init__.py"), str(ROOT / "pipelines/speech/data.py"), str(ROOT)]


def test_the_tests_import_this_checkout():
    """An editable install of another checkout comes after the working directory: the code under
    test is this tree's (vecset/__init__.py searches the folders beside it in a checkout)."""
    from importlib.util import find_spec

    assert Path(vecset.__file__).parent == ROOT / "vecset"
    assert Path(find_spec("vecset.backbone").origin).parent == ROOT / "backbone"
    assert Path(find_spec("vecset.pipelines.cli").origin) == ROOT / "pipelines" / "cli.py"


def static_target(module: str) -> Path | None:
    """The file ``import module`` reads, found with pyproject's package-dir alone (no import, no
    install), as an editor or a layering checker does: ``vecset.backbone.block`` is backbone/block.py."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        folder = SETUPTOOLS["package-dir"].get(".".join(parts[:n]))
        if folder is not None:
            base = ROOT.joinpath(folder, *parts[n:])
            break
    else:
        return None
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def test_a_static_reader_resolves_every_vecset_import():
    """Every ``vecset.`` import in the project (packages, tests, bench, scripts) names a file of
    the tree through pyproject's mapping."""
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
    """Every class path the project shows its users or ships: ``class_path:`` in configs/, the
    guides (docs/, README.md, BENCHMARKS.md) and the packages' docstrings, and every class path
    in the shipped predictors' saved configs -> where it is shown."""
    import torch

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

    def walk(obj, where: str) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k in ("class_path", "_class_path") and isinstance(v, str):
                    found.setdefault(v, []).append(where)
                walk(v, where)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                walk(v, where)

    for path in [*(ROOT / "vecset" / "models").glob("*/model.pt"), *(ROOT / "data").rglob("*.ckpt")]:
        walk(torch.load(path, map_location="cpu", weights_only=True), str(path.relative_to(ROOT)))
    return found


def test_every_class_path_shown_or_shipped_resolves_by_one_name():
    """A class path in a guide, config, docstring or shipped model imports (no compatibility
    layer keeps old paths alive), and a class the vecset.pipelines facade exports is named by
    its facade path (one public path per class)."""
    import vecset.pipelines

    found = shown_class_paths()
    assert "vecset.pipelines.StepCheckpoint" in found and "vecset.pipelines.TaskModule" in found
    assert any(w.startswith("vecset/models/") for w in found["vecset.pipelines.TaskModule"])
    facade = {getattr(vecset.pipelines, n): f"vecset.pipelines.{n}" for n in vecset.pipelines._SOURCES}
    bad = []
    for path, where in sorted(found.items()):
        module, _, name = path.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), name) if module and path.split(".")[0] not in TOP else None
        except (ImportError, AttributeError):
            cls = None
        if cls is None:
            bad.append(f"{path}: does not resolve (shown in {', '.join(sorted(set(where)))})")
        elif facade.get(cls, path) != path:
            bad.append(f"{path}: the facade's {facade[cls]} is its public path (shown in {', '.join(sorted(set(where)))})")
    assert not bad, "class paths:\n" + "\n".join(bad)


def test_no_compatibility_layer_remains():
    """The old module paths of files that moved import nothing: one path per class."""
    for old in ("vecset.pipelines.data.molecules", "vecset.pipelines.reports.speech", "vecset.backbone.vectorset"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)
    assert not (ROOT / "pipelines" / "moved.py").exists() and not (ROOT / "contracts" / "moved.py").exists()


def test_every_job_folders_data_module_is_in_the_facade():
    """``vecset.pipelines.XDataModule`` for each job's data module (the time-series job's was
    missing): every concrete data module a job folder defines."""
    import vecset.pipelines
    from vecset.pipelines.data.base import VecsetDataModule

    jobs = sorted(p.name for p in (ROOT / "pipelines").iterdir() if p.is_dir() and p.name not in GENERIC
                  and (p / "__init__.py").is_file())
    assert "timeseries" in jobs and "molecules" in jobs
    defined = {}
    for job in jobs:
        for path in (ROOT / "pipelines" / job).glob("*.py"):
            module = importlib.import_module(f"vecset.pipelines.{job}.{path.stem}" if path.stem != "__init__"
                                             else f"vecset.pipelines.{job}")
            for name, cls in vars(module).items():
                if inspect.isclass(cls) and issubclass(cls, VecsetDataModule) and cls.__module__ == module.__name__:
                    defined[name] = cls
    bases = {b for cls in defined.values() for b in cls.__mro__[1:]}
    concrete = {n: c for n, c in defined.items() if c not in bases}
    assert "TimeSeriesDataModule" in concrete
    missing = [n for n, c in concrete.items() if getattr(vecset.pipelines, n, None) is not c or n not in vecset.pipelines.__all__]
    assert not missing, missing


# -- the installed package: a wheel in a fresh venv, run from another folder -------------------

def tracked_tree(dest: Path) -> Path:
    """The checkout's files as a fresh clone has them (tracked and new, not ignored: no build
    folders, no generated corpora), copied to ``dest``, so that the build leaves the checkout as
    it is and builds from what a clone holds."""
    r = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       capture_output=True, timeout=120)
    if r.returncode:
        pytest.skip(f"not a git checkout: {r.stderr.decode()[:200]}")
    for rel in filter(None, r.stdout.decode().split("\0")):
        src = ROOT / rel
        if src.is_file() and rel.split("/")[0] in ("pyproject.toml", "README.md", "vecset", "configs", "data", *TOP):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict]:
    """A wheel built from the tree (``pip wheel --no-deps --no-build-isolation``), installed with
    ``--no-deps`` into a fresh venv that sees the test environment's packages (a .pth): its
    ``vecset`` command, and the environment to run it with."""
    pytest.importorskip("setuptools", minversion="77")  # the pyproject's license field; `pip install -e .[dev]` has it
    tmp = tmp_path_factory.mktemp("wheel")
    src, wheels, venv = tracked_tree(tmp / "src"), tmp / "wheels", tmp / "venv"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)],
                   check=True, timeout=600, capture_output=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    site = Path(subprocess.run([str(venv / "bin/python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # every site folder of this environment (its own, and any it reaches through a .pth of its own)
    (site / "test_env.pth").write_text("".join(f"{p}\n" for p in sys.path if p.endswith("site-packages")))
    (wheel,) = wheels.glob("vecset-*.whl")
    subprocess.run([*pip, "--python", str(venv / "bin/python"), "install", "--no-deps", str(wheel)],
                   check=True, timeout=600, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(VECSET_CACHE=str(tmp / "cache"), OMP_NUM_THREADS="1")
    work = tmp / "elsewhere"
    work.mkdir()
    return venv / "bin" / "vecset", {"env": env, "cwd": work, "site": site, "wheel": wheel}


def vecset_run(installed, *args: str) -> subprocess.CompletedProcess:
    exe, ctx = installed
    return subprocess.run([str(exe), *args], cwd=ctx["cwd"], env=ctx["env"], capture_output=True, text=True, timeout=600)


QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false", "--plots=false"]


def test_the_wheel_holds_the_package_its_configs_and_data(installed):
    import zipfile

    names = set(zipfile.ZipFile(installed[1]["wheel"]).namelist())
    assert {"vecset/backbone/block.py", "vecset/pipelines/cli.py", "vecset/configs/solubility.yaml",
            "vecset/data/molecules/solubility.csv", "vecset/data/speech/train.lst",
            "vecset/models/solubility/model.pt"} <= names
    assert not [n for n in names if n.split("/")[0] in TOP]  # no top-level backbone/... in site-packages
    code = "import vecset.backbone, vecset.shipped as s; print(vecset.backbone.__file__); print(s.shipped_root())"
    exe, ctx = installed
    r = subprocess.run([str(exe.parent / "python"), "-c", code], cwd=ctx["cwd"], env=ctx["env"], capture_output=True,
                       text=True, timeout=300)
    assert r.stdout.split() == [str(ctx["site"] / "vecset/backbone/__init__.py"), str(ctx["site"] / "vecset")], r.stderr


def test_the_installed_command_lists_and_copies_configs(installed):
    r = vecset_run(installed, "configs")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^solubility +Aqueous solubility \(logS", r.stdout, re.M) and re.search(r"^debug +Tiny", r.stdout, re.M)
    r = vecset_run(installed, "configs", "copy", "solubility", "mine.yaml")
    assert r.returncode == 0, r.stderr
    assert (installed[1]["cwd"] / "mine.yaml").read_text() == (ROOT / "configs/solubility.yaml").read_text()
    r = vecset_run(installed, "fit", "--config", "nosuch")
    assert r.returncode == 2 and re.search(r"^error: --config nosuch: no such file \(.*\) and no shipped config", r.stderr, re.M), r.stderr
    assert not (installed[1]["cwd"] / "runs").exists()


def test_the_installed_command_fits_shipped_configs_by_name(installed):
    """From a folder that holds nothing: the debug job, the speech job on the shipped corpus
    (its config's data/speech read from the package) and the solubility config on a few of
    the user's molecules; each run under runs/<config name>/."""
    cwd = installed[1]["cwd"]
    r = vecset_run(installed, "fit", "--config", "debug", "--trainer.max_steps=2", *QUIET)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (cwd / "runs/debug/version_0/results.json").is_file()
    r = vecset_run(installed, "fit", "--config", "speech_frames_debug", "--trainer.max_steps=2", *QUIET)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "data/speech" in (cwd / "runs/speech_frames_debug/version_0/config.yaml").read_text()
    lines = (ROOT / "data/molecules/solubility.csv").read_text().splitlines()
    train = [ln for ln in lines[1:] if ln.endswith(",train")][:40]
    test = [ln for ln in lines[1:] if ln.endswith(",test")][:10]
    (cwd / "few.csv").write_text("\n".join([lines[0], *train, *test]) + "\n")
    r = vecset_run(installed, "fit", "--config", "solubility", "--data.init_args.csv_path=few.csv",
                   "--trainer.max_steps=2", *QUIET)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (cwd / "runs/solubility/version_0/results.json").is_file()
    # its init_from, the trunk the config names relative to the data, read from the package
    trunk = installed[1]["site"] / "vecset/data/molecules/pretrained_moses_500k.ckpt"
    assert f"warm start from data/molecules/pretrained_moses_500k.ckpt ({trunk})" in r.stdout, r.stdout[-3000:]


def test_the_installed_command_runs_a_shipped_predictor(installed):
    r = vecset_run(installed, "predict", "--model", "solubility", "--smiles", "CCO")
    assert r.returncode == 0, r.stderr[-3000:]
    header, row = r.stdout.splitlines()[:2]
    assert header.split(",")[:2] == ["input", "logS"] and row.startswith("CCO,")
    assert abs(float(row.split(",")[1]) - 1.1) < 0.5  # ethanol is miscible: logS about 1.1 (Huuskonen)


# -- extras: a job whose modality's packages are missing says which extra installs them ---------

def test_the_extras_table_is_pyprojects():
    from vecset.command import EXTRAS

    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    declared = {re.match(r"[\w-]+", req).group(0).lower(): extra for extra in ("molecules", "speech", "text")
                for req in optional[extra]}
    assert EXTRAS == declared
    assert sorted(optional["all"]) == ["vecset[molecules]", "vecset[speech]", "vecset[text]"]
    assert "vecset[all]" in optional["dev"]


# the command with one module made missing, as Python's own import sees an absent one (None in
# sys.modules). Lightning is imported first: torchmetrics imports librosa where its metadata says
# it is installed, which this simulation does not hide; vecset's own imports are what is tested.
BLOCKED = """
import sys
import pytorch_lightning
blocked = sys.argv.pop(1)
for name in [n for n in sys.modules if n == blocked or n.startswith(blocked + ".")]:
    del sys.modules[name]
sys.modules[blocked] = None
sys.argv[0] = "vecset"
from vecset.command import main
main()
"""


@pytest.mark.parametrize(("module", "extra", "config"), [("rdkit", "molecules", "solubility"),
                                                         ("soundfile", "speech", "speech_frames_debug"),
                                                         ("conllu", "text", "pos_conllu")])
def test_a_job_whose_extra_is_missing_names_it(module, extra, config, tmp_path):
    r = subprocess.run([sys.executable, "-c", BLOCKED, module, "fit", "--config", config, "--trainer.max_steps=1"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    assert r.returncode == 2, r.stderr[-3000:]
    assert r.stderr.splitlines()[-1] == (f"error: this job needs {module}, from the {extra} extra, which is not "
                                         f"installed: pip install 'vecset[{extra}]'")
    assert not [p for p in tmp_path.rglob("runs/**/*") if p.is_file()]  # nothing written
