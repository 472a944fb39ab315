"""The shipped configs and data, found from any folder (vecset/shipped.py): a config by name,
a config's relative data path read from the shipped data, errors naming the places tried."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vecset import shipped
from vecset.command import main

ROOT = Path(__file__).resolve().parents[1]


def test_a_config_is_found_by_name_from_another_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    solubility = str(ROOT / "configs" / "solubility.yaml")
    for given in ("solubility", "solubility.yaml", "configs/solubility.yaml"):
        assert shipped.with_shipped_configs(["fit", "--config", given]) == ["fit", "--config", solubility]
    assert shipped.with_shipped_configs(["fit", "--config=debug"]) == ["fit", f"--config={ROOT / 'configs' / 'debug.yaml'}"]
    # a file of that name in the working directory is the user's: it wins
    (tmp_path / "solubility.yaml").write_text("trainer: {}\n")
    assert shipped.with_shipped_configs(["fit", "-c", "solubility.yaml"]) == ["fit", "-c", "solubility.yaml"]
    with pytest.raises(FileNotFoundError, match=r"^--config nosuch: no such file \(.*nosuch\) and no shipped config "
                                                r"of that name in .*configs \(`vecset configs` lists them: b3db, "):
        shipped.with_shipped_configs(["fit", "--config", "nosuch"])
    assert shipped.shipped_config("other/solubility.yaml") is None  # a path elsewhere is not a name


def test_a_relative_data_path_falls_back_to_the_shipped_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert shipped.data_file("data/molecules/solubility.csv", "csv_path") == ROOT / "data/molecules/solubility.csv"
    (tmp_path / "data/molecules").mkdir(parents=True)
    (tmp_path / "data/molecules/solubility.csv").write_text("smiles,logS\n")  # the user's own wins
    assert shipped.data_file("data/molecules/solubility.csv", "csv_path") == Path("data/molecules/solubility.csv")
    with pytest.raises(FileNotFoundError) as e:
        shipped.data_file("data/molecules/nosuch.csv", "csv_path")
    assert str(e.value) == (f"csv_path: data/molecules/nosuch.csv: no such file or folder (tried "
                            f"{tmp_path / 'data/molecules/nosuch.csv'} and the shipped data, "
                            f"{ROOT / 'data/molecules/nosuch.csv'})")
    with pytest.raises(FileNotFoundError, match=r"^root: /nowhere/speech: no such file or folder$"):
        shipped.data_file("/nowhere/speech", "root")


def test_every_shipped_configs_data_path_resolves_from_another_folder(tmp_path, monkeypatch):
    """The relative paths the shipped configs give (csv_path, root, *_file, init_from) exist in the shipped
    data: a config run by name from an empty folder finds its data (except cifar10's and
    image_folder's, which are the user's own, say so in their headers)."""
    monkeypatch.chdir(tmp_path)
    pattern = re.compile(r"\b(csv_path|root|train_file|val_file|test_file|init_from):\s*(data/[\w./-]+)")
    found = [(p.name, m.group(2)) for p in sorted((ROOT / "configs").glob("*.yaml"))
             for m in pattern.finditer(p.read_text())]
    assert ("solubility.yaml", "data/molecules/solubility.csv") in found and ("speech_frames.yaml", "data/speech") in found
    assert ("solubility.yaml", "data/molecules/pretrained_moses_500k.ckpt") in found  # its warm start
    users_own = {"cifar10.yaml"}
    missing = [(c, v) for c, v in found if c not in users_own and not shipped.data_file(v, "x").exists()]
    assert not missing


def test_vecset_configs_lists_each_with_its_header_line_and_copies_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", ["vecset", "configs"])
    main()
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines] == shipped.config_names() and "timeseries" in shipped.config_names()
    assert any(re.fullmatch(r"debug +Tiny synthetic task that needs attention: .*", ln) for ln in lines)
    monkeypatch.setattr("sys.argv", ["vecset", "configs", "copy", "debug"])
    main()
    assert (tmp_path / "debug.yaml").read_text() == (ROOT / "configs/debug.yaml").read_text()
    monkeypatch.setattr("sys.argv", ["vecset", "configs", "copy", "debug"])  # it exists now: not overwritten
    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code == 2 and capsys.readouterr().err == "error: debug.yaml: exists; give another DEST or remove it\n"
