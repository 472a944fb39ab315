"""Checkpoints load without running code from the file (torch.load(weights_only=True)), hold
plain data only, and a checkpoint that does not fit the config fails saying what differs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from torch import Tensor

from vecset.pipelines.cli import run_cli
from vecset.pipelines.training.checkpoint import CheckpointMismatchError, check_checkpoint

ROOT = Path(__file__).resolve().parents[3]
TINY = ["--config", str(ROOT / "configs/debug.yaml"), "--trainer.max_epochs=1", "--plots=false",
        "--data.init_args.n_train=64", "--data.init_args.n_val=32", "--data.init_args.n_test=32",
        "--trainer.enable_model_summary=false"]
PLAIN = (str, int, float, bool, type(None), Tensor)


def assert_plain(obj, where="checkpoint"):
    """Only dicts/lists/tuples of str, numbers, bools, None and tensors."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            assert isinstance(k, (str, int)), f"{where}: key {k!r} is a {type(k).__name__}"
            assert_plain(v, f"{where}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            assert_plain(v, f"{where}[{i}]")
    else:
        assert isinstance(obj, PLAIN), f"{where} is a {type(obj).__name__}"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("run")
    old = os.getcwd()
    os.chdir(cwd)
    try:
        run_cli(["fit", *TINY])
    finally:
        os.chdir(old)
    ckpts = sorted((cwd / "runs/debug/version_0/checkpoints").glob("*.ckpt"))
    assert {p.name for p in ckpts} >= {"last.ckpt"} and len(ckpts) >= 2, ckpts
    return cwd, ckpts


def test_checkpoints_load_weights_only_and_hold_plain_data(trained):
    _, ckpts = trained
    for path in ckpts:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        assert_plain(ckpt, path.name)
        hp = ckpt["hyper_parameters"]  # the CLI's config as plain data, enough to rebuild the model
        assert hp["encoder"]["class_path"] == "vecset.encoders.VectorEncoder"
        assert hp["head"]["init_args"]["num_classes"] == 2
        assert "vecset_resume" in ckpt  # ResumeState's data position and RNG states, plain too


def test_load_from_checkpoint_weights_only(trained):
    from vecset.pipelines import TaskModule

    _, ckpts = trained
    model = TaskModule.load_from_checkpoint(ckpts[-1], map_location="cpu", weights_only=True)
    ref = torch.load(ckpts[-1], map_location="cpu", weights_only=True)["state_dict"]
    assert all(torch.equal(v, ref[k]) for k, v in model.state_dict().items())


def test_regression_scaler_is_plain_tensor_state():
    from vecset.heads import SequenceHead

    head = SequenceHead(8, 2, task="regression")
    head.fit_scaler(torch.tensor([[1.0, 10.0], [3.0, 30.0]]))
    state = torch.load(_roundtrip(head.state_dict()), weights_only=True)
    assert torch.allclose(state["target_mean"], torch.tensor([2.0, 20.0]))
    assert torch.allclose(state["target_std"], torch.tensor([1.0, 10.0]))


def _roundtrip(obj):
    import io

    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


def _run_with(trained, *args):
    cwd, _ = trained
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with pytest.raises(CheckpointMismatchError) as e:
            run_cli([*args])
    finally:
        os.chdir(old)
    return str(e.value)


def _last(trained) -> str:
    return str(trained[0] / "runs/debug/version_0/checkpoints/last.ckpt")


def test_other_number_of_classes_is_named(trained):
    # without the check, LightningCLI would silently replace num_classes=3 by the checkpoint's 2
    msg = _run_with(trained, "test", *TINY, "--model.init_args.head.init_args.num_classes=3", "--ckpt_path",
                    _last(trained))
    assert "does not match this config" in msg
    assert "model.head.init_args.num_classes: checkpoint has 2, the config has 3" in msg


def test_other_encoder_is_named(trained):
    msg = _run_with(trained, "test", *TINY, "--model.init_args.encoder=resume_helpers.OtherEncoder",
                    "--model.init_args.encoder.init_args.in_dim=2", "--model.init_args.encoder.init_args.d_model=32",
                    "--ckpt_path", _last(trained))
    assert "model.encoder.class_path: checkpoint has 'vecset.encoders.VectorEncoder', the config has " \
           "'resume_helpers.OtherEncoder'" in msg
    assert "in_dim" not in msg  # the arguments of a different class are not compared


def test_resume_last_with_another_head_is_named(trained):
    msg = _run_with(trained, "fit", *TINY, "--model.init_args.head.init_args.num_classes=3", "--ckpt_path", "last")
    assert "version_0/checkpoints/last" in msg
    assert "model.head.init_args.num_classes: checkpoint has 2, the config has 3" in msg


def test_check_checkpoint_names_parameters(trained):
    from vecset.backbone import Backbone
    from vecset.encoders import VectorEncoder
    from vecset.heads import LabelingHead
    from vecset.pipelines import TaskModule

    model = TaskModule(VectorEncoder(2, 32), Backbone(d_model=32, depth=2, heads=4, mlp_ratio=2.0), LabelingHead(32, 3))
    with pytest.raises(CheckpointMismatchError, match=r"head.proj.weight \(2, 32\) in the checkpoint, \(3, 32\) in the model"):
        check_checkpoint(_last(trained), model)
    same = TaskModule.load_from_checkpoint(_last(trained), map_location="cpu", weights_only=True)
    check_checkpoint(_last(trained), same)  # no error
