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


# -- what a user reads first: the setting and the reason, in a few lines --------------------
BB = "--model.init_args.backbone.init_args."


class _RunsCode:
    def __reduce__(self):  # a pickle that would call open() if loaded without weights_only
        return open, ("code-ran", "w")


def _checkpoints(tmp_path: Path) -> dict[str, str]:
    """A real checkpoint of configs/debug.yaml's model, a corrupt file, one that would run code."""
    import torch

    from vecset.backbone import Backbone
    from vecset.encoders import VectorEncoder
    from vecset.heads import LabelingHead
    from vecset.pipelines import TaskModule

    model = TaskModule(VectorEncoder(2, 32), Backbone(32, 2, 4), LabelingHead(32, 2))
    torch.save({"state_dict": model.state_dict()}, tmp_path / "good.ckpt")
    (tmp_path / "corrupt.ckpt").write_bytes(b"not a checkpoint " * 8)
    torch.save({"state_dict": {}, "payload": _RunsCode()}, tmp_path / "evil.ckpt")
    (tmp_path / "ema.yaml").write_text(
        "trainer:\n  callbacks:\n    - class_path: vecset.pipelines.training.averaging.EMAWeightAveraging\n"
        "      init_args: {decay: 1.5}\n")
    (tmp_path / "typo.yaml").write_text("model:\n  init_args:\n    backbone:\n      init_args: {dpeth: 2}\n")
    (tmp_path / "type.yaml").write_text("model:\n  init_args:\n    backbone:\n      init_args: {depth: two}\n")
    (tmp_path / "trainer.yaml").write_text("trainer:\n  max_epoch: 3\n")
    (tmp_path / "class.yaml").write_text("model:\n  init_args:\n    encoder: {class_path: vecset.encoders.NoSuchEncoder}\n")
    return {name.split(".")[0]: str(tmp_path / name) for name in ("good.ckpt", "corrupt.ckpt", "evil.ckpt", "ema.yaml",
                                                                  "typo.yaml", "type.yaml", "trainer.yaml", "class.yaml")}


# case -> (extra arguments, with {name} for _checkpoints' files; the error's first line, as a regex)
FIRST_LINES = {
    "init_from missing": (["--model.init_args.init_from", "{tmp}/nope.ckpt"],
                          r"model\.init_from .*nope\.ckpt: no such file \(the checkpoint a fit from scratch starts from"),
    "init_from corrupt": (["--model.init_args.init_from", "{corrupt}"],
                          r"model\.init_from: .*corrupt\.ckpt is not a PyTorch checkpoint: not a zip"),
    "init_from malicious": (["--model.init_args.init_from", "{evil}"],
                            r"model\.init_from: .*evil\.ckpt was refused on purpose: "
                            r"loading it would run code"),
    "init_parts unknown part": (["--model.init_args.init_from", "{good}", "--model.init_args.init_parts", "[trunk]"],
                                r"model \(vecset\.pipelines\.TaskModule\): model\.init_parts names \['trunk'\]; the parts are "
                                r"\['encoder', 'backbone', 'head'\]"),
    "freeze unknown part": (["--model.init_args.freeze", "[trunk]"],
                            r"model \(vecset\.pipelines\.TaskModule\): model\.freeze names \['trunk'\]; the parts are"),
    "EMA decay 1.5": (["--config", "{ema}"],
                      r"trainer\.callbacks\[0\] \(vecset\.pipelines\.training\.averaging\.EMAWeightAveraging\): "
                      r"Invalid decay value 1\.5 provided\. Please provide a value in \[0,1\] range"),
    "gaussian score with relu": ([BB + "score", "gaussian", BB + "normalize", "relu"],
                                 r"model\.init_args\.backbone \(vecset\.backbone\.Backbone\): score='gaussian' with "
                                 r"normalize='relu' cannot learn"),
    "cls_token with window": ([BB + "cls_token", "true", BB + "window", "4"],
                              r"model\.init_args\.backbone \(vecset\.backbone\.Backbone\): cls_token=True with "
                              r"truncated attention \(window\)"),
    "heads 5 with d_model 64": ([BB + "heads", "5", BB + "d_model", "64"],
                                r"model\.init_args\.backbone \(vecset\.backbone\.Backbone\): d_model=64 must be "
                                r"divisible by heads=5 .*heads that divide it: \[1, 2, 4, 8, 16, 32, 64\]"),
    "YAML key typo": (["--config", "{typo}"],
                      r"model\.init_args\.backbone\.init_args: Option 'dpeth' is not accepted "
                      r"\(vecset\.backbone\.Backbone; did you mean 'depth'\?\)$"),
    "wrong type": (["--config", "{type}"],
                   r"model\.init_args\.backbone\.init_args\.depth: expected an integer; got two "
                   r"\(vecset\.backbone\.Backbone\)"),
    "trainer key typo": (["--config", "{trainer}"], r"Subcommand 'fit' does not accept option 'trainer\.max_epoch'"),
    "unknown class": (["--config", "{class}"],
                      r"model\.init_args\.encoder\.class_path: module 'vecset\.encoders' has no attribute 'NoSuchEncoder'"),
    "command-line typo": (["--model.init_args.lrr=0.1"],
                          r"model\.init_args: Option 'lrr' is not accepted \(vecset\.pipelines\.TaskModule; "
                          r"did you mean 'lr'\?\)$"),
}


@pytest.mark.parametrize("case", list(FIRST_LINES))
def test_the_first_line_of_an_error_names_the_setting_and_the_reason(tmp_path, monkeypatch, capsys, case):
    import re

    args, first = FIRST_LINES[case]
    files = {**_checkpoints(tmp_path), "tmp": str(tmp_path)}
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        run_cli(["fit", "--config", str(ROOT / "configs/debug.yaml"), *[a.format(**files) for a in args]])
    assert e.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("Seed set to")]
    assert lines and re.match("error: " + first, lines[0]), "\n".join(lines[:20])
    assert len(lines) < 10, "\n".join(lines)  # no traceback, usage text or Union dump
    assert "Union subtypes" not in "\n".join(lines) and "Traceback" not in "\n".join(lines)
    assert not (tmp_path / "code-ran").exists()
    # nothing written: init_from is read when the fit starts, and the failed run's folder is removed
    assert not [p for p in (tmp_path / "runs").rglob("*") if p.is_file()]


def test_jsonargparse_debug_keeps_the_whole_traceback(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JSONARGPARSE_DEBUG", "true")
    with pytest.raises(ValueError) as e:
        run_cli(["fit", "--config", str(ROOT / "configs/debug.yaml"), BB + "heads", "5", BB + "d_model", "64"])
    assert "Union subtypes" in str(e.value)  # jsonargparse's own exception, unchanged


def test_a_multi_task_heads_entry_is_named_by_its_task(tmp_path, monkeypatch, capsys):
    cfg = yaml.safe_load((ROOT / "configs/debug_multitask.yaml").read_text())
    cfg["model"]["init_args"]["heads"]["mean"]["init_args"]["label_smoothing"] = 1.5
    path = tmp_path / "mt.yaml"
    path.write_text(yaml.safe_dump(cfg))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        run_cli(["fit", "--config", str(path)])
    assert e.value.code == 2
    first = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("error:"))
    assert first == ("error: model.init_args.heads.mean (vecset.heads.SequenceHead): label_smoothing must be in "
                     "[0, 1), got 1.5"), first


@pytest.mark.parametrize("args,first", [
    (["--data.init_args.placement.on_device", "maybe"],
     "error: data.init_args.placement.on_device: expected true or false, or 'auto'; got maybe "
     "(vecset.pipelines.SpeechFramesDataModule)"),
    (["--data.init_args.placement.length_buckets", "foo"],
     "error: data.init_args.placement.length_buckets: expected 'pow2', a list of int, or null; got foo "
     "(vecset.pipelines.SpeechFramesDataModule)"),
    (["--trainer.enable_progress_bar", "maybe"], "error: trainer.enable_progress_bar: expected true or false, or null; got maybe"),
])
def test_a_wrong_value_is_told_every_value_the_setting_takes(tmp_path, monkeypatch, capsys, args, first):
    """Issue 57: "Expected a <class 'bool'>" (jsonargparse's first Union type) hid that on_device
    takes auto, and length_buckets printed "Expected a typing.Literal['pow2']"."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        run_cli(["fit", "--config", str(ROOT / "configs/speech_frames_debug.yaml"), *args])
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines()[0] == first
