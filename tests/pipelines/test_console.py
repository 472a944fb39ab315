"""What the ``vecset`` command prints: no message that does not apply to the run (each is
fixed at its cause or silenced exactly), and no wrong text (a progress bar's ``Epoch 38/-2``,
a FLOPs column of zeros).

"Printed" here is the captured stdout and stderr plus the warnings the run emitted (pytest
records warnings instead of letting Python print them)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import warnings
from pathlib import Path

import pytest

from vecset.pipelines.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--config", str(ROOT / "configs/debug.yaml"), "--plots=false", "--data.init_args.n_train=64",
        "--data.init_args.n_val=32", "--data.init_args.n_test=32"]


def printed(capsys, recwarn) -> str:
    out = capsys.readouterr()
    text = out.out + out.err + "".join(f"{w.filename}:{w.lineno}: {w.message}\n" for w in recwarn)
    recwarn.clear()
    return text


@pytest.fixture(scope="module")
def step_limited(tmp_path_factory):
    """A step-limited fit (max_steps, max_epochs -1 as in configs/multitask.yaml) with the
    progress bar and model summary on: its directory and what it printed."""
    cwd = tmp_path_factory.mktemp("console")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), warnings.catch_warnings(record=True) as caught, \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        warnings.simplefilter("default")
        os.environ["COLUMNS"] = "120"  # rich's console width: the bar's line is not wrapped
        try:
            cli = run_cli(["fit", *TINY, "--trainer.max_steps=3", "--trainer.max_epochs=-1",
                           "--trainer.log_every_n_steps=1"])
        finally:
            os.environ.pop("COLUMNS")
    assert cli.trainer.max_epochs == -1 and cli.trainer.global_step == 3
    return cwd, out.getvalue() + err.getvalue() + "".join(f"{w.filename}:{w.lineno}: {w.message}\n" for w in caught)


def test_step_limited_fit_prints_a_plain_epoch_title_and_no_flops(step_limited):
    _, text = step_limited
    # the bar's last state (3 epochs of 1 step); Lightning's read "Epoch 2/-2"
    assert re.search(r"^Epoch 2 +━", text, re.M) and "/-2" not in text, text
    # the model summary, without the FLOPs Lightning counts only from an example_input_array
    # (vecset's modules have none: every count read 0)
    assert "Total params: 17.3 K" in text and "train_metrics" in text, text
    assert "FLOPs" not in text, text


def test_an_epoch_limited_fit_keeps_lightnings_title(tmp_path, capsys, recwarn, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    run_cli(["fit", *TINY, "--trainer.max_epochs=2", "--trainer.enable_model_summary=false"])
    assert re.search(r"^Epoch 1/1 +━", printed(capsys, recwarn), re.M)


@pytest.mark.parametrize("command", ["validate", "test", "predict"])
def test_evaluating_a_checkpoint_does_not_print_lightnings_dirpath_note(step_limited, capsys, recwarn, monkeypatch,
                                                                       command):
    """Lightning noted at every evaluation of a checkpoint that the ModelCheckpoint's state
    (best scores) of the run that wrote it is not reloaded, with a site-packages path: that
    state matters only to a fit that keeps saving into the checkpoint's directory."""
    monkeypatch.chdir(step_limited[0])
    ckpt = step_limited[0] / "runs/debug/version_0/checkpoints/last.ckpt"
    run_cli([command, *TINY, "--ckpt_path", str(ckpt), "--trainer.enable_progress_bar=false"])
    text = printed(capsys, recwarn)
    assert "dirpath has changed" not in text, text


def test_karate_fit_prints_no_logging_interval_warning(tmp_path, capsys, recwarn, monkeypatch):
    """configs/karate.yaml has one batch per epoch: with log_every_n_steps 10 Lightning warned
    at every fit that the epoch is shorter than the logging interval."""
    monkeypatch.chdir(tmp_path)
    run_cli(["fit", "--config", str(ROOT / "configs/karate.yaml"), "--trainer.max_epochs=2", "--plots=false",
             "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"])
    text = printed(capsys, recwarn)
    assert "logging interval" not in text and "log_every_n_steps" not in text, text
