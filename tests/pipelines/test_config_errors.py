"""A config with an unknown key or a wrong type is rejected by the CLI, naming the key
(jsonargparse does this for LightningCLI; these tests keep it so)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vecset.pipelines.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]


def bad_config(tmp_path: Path, edit) -> Path:
    cfg = yaml.safe_load((ROOT / "configs/debug.yaml").read_text())
    edit(cfg)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


CASES = {
    "unknown trainer key": (lambda c: c["trainer"].update(max_epoch=3), "max_epoch"),
    "unknown head argument": (lambda c: c["model"]["init_args"]["head"]["init_args"].update(num_clases=2), "num_clases"),
    "unknown data argument": (lambda c: c["data"]["init_args"].update(batchsize=8), "batchsize"),
    "wrong type, trainer": (lambda c: c["trainer"].update(max_epochs="twelve"), "max_epochs"),
    "wrong type, backbone": (lambda c: c["model"]["init_args"]["backbone"]["init_args"].update(depth=2.5), "depth"),
    "wrong type, data": (lambda c: c["data"]["init_args"].update(batch_size="big"), "batch_size"),
    "unknown class": (lambda c: c["model"]["init_args"]["encoder"].update(class_path="vecset.encoders.NoSuchEncoder"),
                      "NoSuchEncoder"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_config_is_rejected_naming_the_key(tmp_path, monkeypatch, capsys, case):
    edit, key = CASES[case]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        run_cli(["fit", "--config", str(bad_config(tmp_path, edit))])
    assert e.value.code != 0
    err = capsys.readouterr().err
    assert "error:" in err and key in err, err[-2000:]
    assert not (tmp_path / "runs").exists()  # rejected before anything ran


def test_unknown_command_line_key_is_rejected(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        run_cli(["fit", "--config", str(ROOT / "configs/debug.yaml"), "--model.init_args.lrr=0.1"])
    assert "lrr" in capsys.readouterr().err
