"""Warm-started runs, resuming and run folders through the ``vecset`` command: a run's own
checkpoint is enough to test, export and resume it once its ``init_from`` file is gone; a fit
from a run's checkpoint continues that run's folder; a failed fit leaves no empty folder, and
``--ckpt_path last`` resumes the newest version that has a last checkpoint."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from vecset.pipelines.cli import run_cli
from vecset.pipelines.training.run_folders import resumed_run, resumed_version, run_of_checkpoint

ROOT = Path(__file__).resolve().parents[3]
QUIET = ["--plots=false", "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]


def tiny_config(tmp: Path, name: str, **model_args) -> Path:
    """configs/debug.yaml, one short epoch."""
    cfg = yaml.safe_load((ROOT / "configs/debug.yaml").read_text())
    cfg["trainer"].update(max_epochs=1, log_every_n_steps=1)
    cfg["trainer"].pop("callbacks", None)
    cfg["model"]["init_args"].update(model_args)
    cfg["data"]["init_args"].update(n_train=64, n_val=32, n_test=32, batch_size=32)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def epochs_validated(run_dir: Path) -> list[int]:
    with open(run_dir / "metrics.csv", newline="") as f:
        return sorted({int(r["epoch"]) for r in csv.DictReader(f) if r.get("val_acc")})


def test_a_warm_started_run_needs_only_its_own_checkpoint(tmp_path, monkeypatch, capsys):
    """Its init_from file deleted, a warm-started run is tested with its saved config and with the
    job's config without init_from, exported with either config, and resumed (into its own folder, saying that
    init_from is ignored because the run resumes)."""
    from vecset.pipelines.export.command import run_export

    monkeypatch.chdir(tmp_path)
    run_cli(["fit", "--config", str(tiny_config(tmp_path, "source")), *QUIET])
    pre = tmp_path / "pretrained.ckpt"
    Path("runs/source/version_0/checkpoints/last.ckpt").rename(pre)
    tuned = tiny_config(tmp_path, "tuned", init_from=str(pre), init_parts=["encoder", "backbone"])
    run_cli(["fit", "--config", str(tuned), *QUIET])
    assert f"warm start from {pre}" in capsys.readouterr().out
    pre.unlink()  # moved or deleted: the run's own checkpoint must be enough
    run = tmp_path / "runs/tuned/version_0"
    own = str(run / "checkpoints/last.ckpt")
    plain = tiny_config(tmp_path, "tuned_plain")  # the job's config, no init_from
    for config in (run / "config.yaml", plain):
        cli = run_cli(["test", "--config", str(config), "--ckpt_path", own, *QUIET])
        assert "test_acc" in cli.trainer.callback_metrics
    for config in (run / "config.yaml", tuned):
        report = run_export(["--config", str(config), "--ckpt_path", own, "--no_onnx",
                             "--output_dir", str(tmp_path / "exported")])
        assert report["max_abs_diff"]["pt2"] <= 1e-5
    capsys.readouterr()
    before = sorted(p.name for p in (tmp_path / "runs/tuned").iterdir())  # the test above made one of its own
    cli = run_cli(["fit", "--config", str(plain), "--ckpt_path", own, "--trainer.max_epochs=2", *QUIET])
    out = capsys.readouterr().out
    assert f"model.init_from {pre} is ignored: the run resumes from {own}" in out and "warm start from" not in out
    assert Path(cli.trainer.log_dir) == Path("runs/tuned/version_0") and cli.trainer.current_epoch == 2
    assert sorted(p.name for p in (tmp_path / "runs/tuned").iterdir()) == before
    assert epochs_validated(run) == [0, 1]  # one metrics history, in one folder


def test_a_failed_fit_leaves_no_empty_folder_and_a_resume_continues_the_run_with_a_checkpoint(tmp_path, monkeypatch,
                                                                                              capsys):
    monkeypatch.chdir(tmp_path)
    cfg = tiny_config(tmp_path, "job")
    # stopped (as by SIGTERM) at the start of epoch 1 (2 steps an epoch): epoch 0's last.ckpt, no results
    with pytest.raises(SystemExit):
        run_cli(["fit", "--config", str(cfg), "--trainer.max_epochs=2", "--trainer.callbacks+=resume_helpers.StopAtStep",
                 "--trainer.callbacks.step=2", *QUIET])
    with pytest.raises(SystemExit) as e:  # a data error: one line, exit 2
        run_cli(["fit", "--config", str(cfg), "--data.class_path=resume_helpers.FailingSetupData", *QUIET])
    assert e.value.code == 2
    assert sorted(p.name for p in (tmp_path / "runs/job").iterdir()) == ["version_0"]
    cli = run_cli(["fit", "--config", str(cfg), "--ckpt_path", "last", "--trainer.max_epochs=2", *QUIET])
    assert Path(cli.trainer.log_dir) == Path("runs/job/version_0") and cli.trainer.current_epoch == 2
    # a finished run resumed from its checkpoint file (named: to train it further) continues its
    # folder too, saying that it had finished
    last = str(tmp_path / "runs/job/version_0/checkpoints/last.ckpt")
    capsys.readouterr()
    cli = run_cli(["fit", "--config", str(cfg), "--ckpt_path", last, "--trainer.max_epochs=3", *QUIET])
    assert f"vecset: runs/job/version_0 had finished; it continues from {last}" in capsys.readouterr().out
    assert Path(cli.trainer.log_dir) == Path("runs/job/version_0") and cli.trainer.current_epoch == 3
    assert sorted(p.name for p in (tmp_path / "runs/job").iterdir()) == ["version_0"]
    assert epochs_validated(tmp_path / "runs/job/version_0") == [0, 1, 2]


def test_last_skips_a_newer_version_without_a_last_checkpoint(tmp_path):
    (tmp_path / "version_0/checkpoints").mkdir(parents=True)
    (tmp_path / "version_0/checkpoints/last.ckpt").write_bytes(b"")
    (tmp_path / "version_1").mkdir()  # a run that failed before saving (left by an older vecset)
    assert resumed_version(["fit", "--ckpt_path", "last"], tmp_path) == 0
    (tmp_path / "version_2/checkpoints").mkdir(parents=True)
    (tmp_path / "version_2/checkpoints/last-step.ckpt").write_bytes(b"")
    assert resumed_version(["fit", "--ckpt_path", "last"], tmp_path) == 2


def test_the_run_of_a_checkpoint_file(tmp_path):
    runs = tmp_path / "runs"
    ckpt = runs / "job" / "version_3" / "checkpoints" / "last.ckpt"
    assert run_of_checkpoint(ckpt) == ("job", 3) and run_of_checkpoint(ckpt, runs) == ("job", 3)
    assert run_of_checkpoint(ckpt, tmp_path / "elsewhere") is None
    assert run_of_checkpoint(tmp_path / "pretrained.ckpt") is None and run_of_checkpoint("s3://b/x.ckpt") is None
    assert resumed_run(["fit", "--ckpt_path", str(ckpt)], runs) == ("job", 3)
    assert resumed_run(["fit", f"--ckpt_path={ckpt}"], runs) == ("job", 3)
    assert resumed_run(["test", "--ckpt_path", str(ckpt)], runs) is None  # a test writes a run of its own
    assert resumed_run(["fit", "--ckpt_path", "last"], runs) is None


def test_a_multi_task_config_takes_init_from(tmp_path, monkeypatch, capsys):
    """configs/debug_multitask.yaml with init_from a single-task checkpoint (as docs/molecules.md
    says of every molecule job): every task's encoder and the backbone load."""
    import torch

    from vecset.backbone import Backbone
    from vecset.encoders.vector import VectorEncoder
    from vecset.heads import LabelingHead
    from vecset.pipelines import TaskModule

    source = TaskModule(VectorEncoder(2, 32), Backbone(32, 2, 4, mlp_ratio=2.0), LabelingHead(32, 2))
    path = tmp_path / "single.ckpt"
    torch.save({"state_dict": source.state_dict()}, path)
    monkeypatch.chdir(tmp_path)
    cli = run_cli(["--config", str(ROOT / "configs/debug_multitask.yaml"), "--model.init_args.init_from", str(path),
                   "--model.init_args.init_parts", "[encoder, backbone]"], run=False)
    report = cli.model.apply_warm_start()  # what a fit from scratch does at its start
    assert {n: len(r.loaded) for n, r in report.items() if r.included} == {
        "backbone": len(source.backbone.state_dict()), "encoders.above": 2, "encoders.mean": 2}
    assert f"warm start from {path}" in capsys.readouterr().out


def test_init_from_is_not_compared_with_a_runs_checkpoint():
    """Where a run's first weights came from does not make its checkpoint differ from a config
    (resuming or testing it without init_from, or with another); freeze does."""
    from vecset.pipelines.training.checkpoint_fit import hparams_mismatch

    saved = {"init_from": "gone/pretrained.ckpt", "init_parts": ["encoder", "backbone"], "freeze": None}
    assert hparams_mismatch(saved, {"init_from": None, "init_parts": None, "freeze": None}) == []
    assert hparams_mismatch(saved, {"init_from": None, "freeze": ["encoder"]}) == [
        "model.freeze: checkpoint has None, the config has ['encoder']"]
