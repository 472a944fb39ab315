"""scripts/get_fashion_mnist.py (make fashion-mnist): installs the Debian package only as root
and only for its own folder; otherwise says which package to install and where it looked."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "get_fashion_mnist.py"
spec = importlib.util.spec_from_file_location("get_fashion_mnist", SCRIPT)
get = importlib.util.module_from_spec(spec)
sys.modules["get_fashion_mnist"] = get
spec.loader.exec_module(get)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipelines" / "data"))
from test_fashion_mnist import write_dataset  # noqa: E402


@pytest.fixture
def package_root(tmp_path, monkeypatch):
    root = tmp_path / "usr-share-datasets-fashion-mnist"
    monkeypatch.setattr(get.fm, "DEFAULT_ROOT", str(root))
    return root


def fake_apt(package_root, calls: list, known: bool):
    """subprocess.run as apt: ``apt-cache show`` finds the package only when ``known`` (or after
    ``apt-get update``); ``apt-get install`` fails on a package the lists do not hold."""
    import subprocess

    lists = {"known": known}

    def run(cmd, **kw):
        calls.append(cmd)
        if cmd[:2] == ["apt-cache", "show"]:
            return subprocess.CompletedProcess(cmd, 0 if lists["known"] else 100,
                                               stdout="Package: dataset-fashion-mnist\n" if lists["known"] else "",
                                               stderr="" if lists["known"] else "E: No packages found")
        if cmd == ["apt-get", "update"]:
            lists["known"] = True
        elif cmd[:2] == ["apt-get", "install"]:
            if not lists["known"]:
                raise subprocess.CalledProcessError(100, cmd)  # E: Unable to locate package
            write_dataset(package_root, n_train=20, n_test=10)  # what the package puts there
        return subprocess.CompletedProcess(cmd, 0, stdout="", stderr="")

    return run


def test_installs_as_root_when_missing(package_root, monkeypatch):
    calls = []
    monkeypatch.setattr(get.os, "geteuid", lambda: 0)
    monkeypatch.setattr(get.shutil, "which", lambda name: "/usr/bin/apt-get")
    monkeypatch.setattr(get.subprocess, "run", fake_apt(package_root, calls, known=True))
    files = get.ensure(package_root, install=True)
    assert calls == [["apt-cache", "show", "dataset-fashion-mnist"], ["apt-get", "install", "-y", "dataset-fashion-mnist"]]
    assert files["train"][0] == package_root / "train-images-idx3-ubyte.gz"
    assert get.summary(files) == ("train: 20 images of 28x28 (train-images-idx3-ubyte.gz), 10 classes; "
                                  "test: 10 images of 28x28 (t10k-images-idx3-ubyte.gz), 10 classes")


def test_updates_the_package_lists_first_when_they_do_not_hold_the_package(package_root, monkeypatch, capsys):
    # a fresh machine (a container) has empty package lists: install alone fails to locate it
    calls = []
    monkeypatch.setattr(get.os, "geteuid", lambda: 0)
    monkeypatch.setattr(get.shutil, "which", lambda name: "/usr/bin/apt-get")
    monkeypatch.setattr(get.subprocess, "run", fake_apt(package_root, calls, known=False))
    files = get.ensure(package_root, install=True)
    assert calls == [["apt-cache", "show", "dataset-fashion-mnist"], ["apt-get", "update"],
                     ["apt-get", "install", "-y", "dataset-fashion-mnist"]]
    assert files["test"][1].name == "t10k-labels-idx1-ubyte.gz"
    assert "the package lists do not hold dataset-fashion-mnist: apt-get update first" in capsys.readouterr().err


def test_says_which_package_to_install_otherwise(package_root, monkeypatch):
    monkeypatch.setattr(get.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(get.subprocess, "run", lambda *a, **k: pytest.fail("must not run apt-get"))
    with pytest.raises(SystemExit, match=r"(?s)does not exist.*searched: .*usr-share-datasets-fashion-mnist.*"
                                         r"sudo apt-get install dataset-fashion-mnist"):
        get.ensure(package_root, install=True)


def test_another_folder_is_never_installed_into(package_root, tmp_path, monkeypatch):
    monkeypatch.setattr(get.os, "geteuid", lambda: 0)
    monkeypatch.setattr(get.subprocess, "run", lambda *a, **k: pytest.fail("must not run apt-get"))
    with pytest.raises(SystemExit, match=r"mine does not exist"):
        get.ensure(tmp_path / "mine", install=True)
    assert get.ensure(write_dataset(tmp_path / "ok"), install=False)["test"][1].name == "t10k-labels-idx1-ubyte.gz"
