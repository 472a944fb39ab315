"""``vecset validate`` / ``test`` without ``--ckpt_path`` score the weights the config builds
(random): a warning says so; with a checkpoint there is none."""

from __future__ import annotations

from pathlib import Path

import pytest

from vecset.pipelines.cli import run_cli

DEBUG = str(Path(__file__).resolve().parents[2] / "configs" / "debug.yaml")
TINY = ["--trainer.enable_progress_bar=false", "--plots=false", "--trainer.logger=false",
        "--data.init_args.n_train=32", "--data.init_args.n_val=32", "--data.init_args.n_test=32"]


def test_validate_without_a_checkpoint_says_so(tmp_path, monkeypatch, recwarn):
    monkeypatch.chdir(tmp_path)
    with pytest.warns(UserWarning, match=r"^vecset validate: no --ckpt_path: the model runs with the weights its "
                                         r"config builds \(random, unless"):
        cli = run_cli(["validate", "--config", DEBUG, *TINY])
    ckpt = tmp_path / "model.ckpt"
    cli.trainer.save_checkpoint(ckpt)
    recwarn.clear()
    run_cli(["validate", "--config", DEBUG, *TINY, "--ckpt_path", str(ckpt)])
    assert not [w for w in recwarn if "no --ckpt_path" in str(w.message)]
