"""bench/molecule_pretrain.py (issue #31): ``--ckpt`` picks the checkpoint the pretrained runs
start from (and only they get one), a missing one stops the script before any run, and the runs
import this checkout's ``vecset`` whatever the ``vecset`` command's editable install points at."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import molecule_pretrain as mp  # noqa: E402


def init_from(args: list[str]) -> str | None:
    return args[args.index("--model.init_args.init_from") + 1] if "--model.init_args.init_from" in args else None


def test_the_pretrained_run_starts_from_the_given_checkpoint_and_none_from_nothing():
    args, env, run = mp.command("freesolv", "configs/freesolv.yaml", 3, "pretrained", [], "big", "x/other.ckpt")
    assert init_from(args) == "x/other.ckpt"
    assert args[args.index("--data.init_args.split.seed") + 1] == "3"
    assert run == env["VECSET_RUN_NAME"] == "bench_pretrain_freesolv_s3_pretrained_big"
    args, _, run = mp.command("freesolv", "configs/freesolv.yaml", 3, "none", [], "big", "x/other.ckpt")
    assert init_from(args) == "null" and run == "bench_pretrain_freesolv_s3_none_big"  # a trunk config starts from scratch too
    # the default is the shipped checkpoint, and it is there
    assert init_from(mp.command("solubility", "configs/solubility.yaml", 0, "pretrained", [])[0]) == mp.CKPT
    assert (ROOT / mp.CKPT).is_file()


def test_a_missing_checkpoint_stops_before_any_run(monkeypatch):
    def no_launch(*a, **k):
        raise AssertionError("launched a run")

    monkeypatch.setattr(mp, "launch", no_launch)
    with pytest.raises(SystemExit, match="no-such.ckpt"):
        mp.main(["--set", "freesolv", "--ckpt", "data/molecules/no-such.ckpt"])


def test_the_ckpt_is_written_into_the_json(monkeypatch, tmp_path):
    """main's JSON names the checkpoint given, not the default (the runs are faked)."""
    ckpt = tmp_path / "big.ckpt"
    ckpt.write_bytes(b"")
    seen = []

    class Done:
        returncode = 0

        def wait(self):
            return 0

    def fake_launch(name, config, split, init, extra, tag="", ckpt=mp.CKPT, nice=5):
        seen.append((init, ckpt, tag, nice, extra))
        return Done(), tmp_path / init

    monkeypatch.setattr(mp, "launch", fake_launch)
    monkeypatch.setattr(mp, "collect", lambda name, run: {"best_val": 1.0, "test": {"test_rmse": 2.0}})
    out = tmp_path / "out.json"
    mp.main(["--set", "freesolv", "--inits", "pretrained", "--ckpt", str(ckpt), "--tag", "big", "--out", str(out)])
    assert seen == [("pretrained", str(ckpt), "big", 5, [])]
    assert json.loads(out.read_text())["checkpoint"] == str(ckpt)
    # --seed: every run's seed_everything, after the --extra arguments, and in the JSON
    mp.main(["--set", "freesolv", "--inits", "none", "--seed", "2", "--extra=--trainer.max_epochs=3", "--out", str(out)])
    assert seen[-1][0] == "none" and seen[-1][-1] == ["--trainer.max_epochs=3", "--seed_everything=2"]
    assert json.loads(out.read_text())["seed"] == 2


def test_the_runs_import_this_checkout(tmp_path):
    """The environment of a run puts this checkout first: a child started elsewhere imports
    ``vecset`` from here (the shared virtual environment's editable install may be another
    checkout's)."""
    _, env, _ = mp.command("freesolv", "configs/freesolv.yaml", 0, "none", [])
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)
    assert env["OMP_WAIT_POLICY"] == "PASSIVE"
    # where the child's ``import vecset.pipelines`` would load it from: find_spec imports the
    # package ``vecset`` (light: its names load lazily), not Lightning
    find = "import importlib.util; print(importlib.util.find_spec('vecset.pipelines').origin)"
    found = subprocess.run([sys.executable, "-c", find],
                           env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(found).resolve().is_relative_to(ROOT.resolve())
