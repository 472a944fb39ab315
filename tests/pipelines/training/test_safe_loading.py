"""Checkpoints load without running code from the file (torch.load(weights_only=True)), hold
plain data only, and a checkpoint that does not fit the config fails saying what differs."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import torch
from torch import Tensor

from vecset.pipelines.cli import run_cli
from vecset.pipelines.training.checkpoint_fit import CheckpointMismatchError, check_checkpoint

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
    with contextlib.chdir(cwd):
        run_cli(["fit", *TINY])
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
    with contextlib.chdir(cwd):
        with pytest.raises(CheckpointMismatchError) as e:
            run_cli([*args])
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


def test_resume_last_with_another_head_is_named(trained, capsys):
    # the run's saved config is compared before its checkpoint: one error line, exit 2
    capsys.readouterr()
    with contextlib.chdir(trained[0]), pytest.raises(SystemExit) as e:
        run_cli(["fit", *TINY, "--model.init_args.head.init_args.num_classes=3", "--ckpt_path", "last"])
    first = capsys.readouterr().err.splitlines()[0]
    assert e.value.code == 2 and first.startswith("error: --ckpt_path last: runs/debug/version_0 is another run")
    assert "model.init_args.head.init_args.num_classes: the run has 2, the config has 3" in first


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


def test_file_url_checkpoint_is_checked_like_a_path(trained):
    # same parameter shapes, another attention normalization: without the check the file://
    # checkpoint loaded into the config's model without a word
    msg = _run_with(trained, "test", *TINY, "--model.init_args.backbone.init_args.normalize=relu", "--ckpt_path",
                    "file://" + _last(trained))
    assert f"checkpoint file://{_last(trained)} does not match this config" in msg
    assert "model.backbone.init_args.normalize: checkpoint has 'softmax', the config has 'relu'" in msg


def _not_checkpoints(tmp_path: Path) -> dict[str, Path]:
    import zipfile

    files = {"empty": tmp_path / "empty.ckpt", "text": tmp_path / "notes.ckpt", "zip": tmp_path / "other.ckpt"}
    files["empty"].write_bytes(b"")
    files["text"].write_text("epoch 3, loss 0.2\n")
    with zipfile.ZipFile(files["zip"], "w") as z:  # a zip archive, but not torch.save's
        z.writestr("readme.txt", "hello")
    return files


@pytest.mark.parametrize("kind", ["empty", "text", "zip"])
def test_a_file_that_is_not_a_checkpoint_is_named(tmp_path, monkeypatch, kind):
    from vecset.backbone import Backbone
    from vecset.encoders import VectorEncoder
    from vecset.heads import LabelingHead
    from vecset.pipelines import TaskModule
    from vecset.pipelines.training.checkpoint_files import NotACheckpointError

    bad = _not_checkpoints(tmp_path)[kind]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotACheckpointError, match=f"{bad} is not a PyTorch checkpoint"):
        run_cli(["predict", *TINY, "--ckpt_path", str(bad)])
    model = TaskModule(VectorEncoder(2, 32), Backbone(32, 2, 4), LabelingHead(32, 2))
    with pytest.raises(NotACheckpointError, match=f"{bad} is not a PyTorch checkpoint"):
        check_checkpoint(bad, model)
    with pytest.raises(NotACheckpointError, match=f"{bad} is not a PyTorch checkpoint"):
        TaskModule(VectorEncoder(2, 32), Backbone(32, 2, 4), LabelingHead(32, 2), backbone_ckpt=str(bad))


def test_backbone_ckpt_of_another_size_is_one_line(trained):
    from vecset.backbone import Backbone
    from vecset.encoders import VectorEncoder
    from vecset.heads import LabelingHead
    from vecset.pipelines import TaskModule

    with pytest.raises(ValueError) as e:  # the checkpoint's backbone has d_model 32
        TaskModule(VectorEncoder(2, 64), Backbone(d_model=64, depth=2, heads=4, mlp_ratio=2.0), LabelingHead(64, 2),
                   backbone_ckpt=_last(trained))
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"the backbone in {_last(trained)} does not match the configured one")
    assert "blocks.0.attn.in_proj.weight (96, 32) in the checkpoint, (192, 64) in the model" in msg


def test_decode_settings_are_not_part_of_the_match():
    """A seq2seq head's beam size, length penalty and maximum output length only change how a
    trained model decodes; another class's argument of the same name (a positional table's
    max_len) still has to match."""
    from vecset.pipelines.training.checkpoint_fit import hparams_mismatch

    def config(beam: int, penalty: float, max_len: int, enc_max_len: int | None) -> dict:
        return {"encoder": {"class_path": "vecset.encoders.VectorEncoder", "init_args": {"max_len": enc_max_len}},
                "head": {"class_path": "vecset.heads.Seq2SeqHead",
                         "init_args": {"d_model": 32, "beam_size": beam, "length_penalty": penalty, "max_len": max_len}}}

    assert hparams_mismatch(config(1, 0.0, 20, None), config(3, 0.6, 40, None)) == []
    assert hparams_mismatch(config(1, 0.0, 20, None), config(1, 0.0, 20, 64)) == [
        "model.encoder.init_args.max_len: checkpoint has None, the config has 64"]

    # a labeling head's segment decoder is a decode setting, and a component: nothing under it counts
    def labeling(decoder: dict | None, d_model: int = 16) -> dict:
        return {"head": {"class_path": "vecset.heads.LabelingHead",
                         "init_args": {"d_model": d_model, "num_classes": 50, "decoder": decoder}}}

    dec = lambda p, d: {"class_path": "vecset.heads.SegmentDecoder",  # noqa: E731
                        "init_args": {"switch_penalty": p, "min_duration": d}}
    assert hparams_mismatch(labeling(dec(3.0, 3)), labeling(dec(1.0, 1))) == []
    assert hparams_mismatch(labeling(None), labeling(dec(1.0, 1))) == []
    assert hparams_mismatch(labeling(dec(3.0, 3)), labeling(dec(3.0, 3), d_model=8)) == [
        "model.head.init_args.d_model: checkpoint has 16, the config has 8"]


def test_file_url_and_path_test_the_same_model(trained):
    cwd, _ = trained
    with contextlib.chdir(cwd):
        metrics = [run_cli(["test", *TINY, "--ckpt_path", p]).trainer.callback_metrics["test_acc"].item()
                   for p in (_last(trained), "file://" + _last(trained))]
    assert metrics[0] == metrics[1]


def test_read_checkpoint_through_fsspec(trained):
    """A URL of another filesystem (s3://, here fsspec's in-memory one) is read as Lightning
    reads it, with the same checks."""
    import fsspec

    from vecset.pipelines.training.checkpoint_files import NotACheckpointError, read_checkpoint

    fs = fsspec.filesystem("memory")
    fs.pipe("/vecset/last.ckpt", Path(_last(trained)).read_bytes())
    fs.pipe("/vecset/empty.ckpt", b"")
    ckpt = read_checkpoint("memory://vecset/last.ckpt")
    ref = torch.load(_last(trained), map_location="cpu", weights_only=True)
    assert ckpt["global_step"] == ref["global_step"] and ckpt["state_dict"].keys() == ref["state_dict"].keys()
    with pytest.raises(NotACheckpointError, match="memory://vecset/empty.ckpt is not a PyTorch checkpoint: the file is empty"):
        read_checkpoint("memory://vecset/empty.ckpt")


# -- a checkpoint of another module class, of old code, or one that would run code --------
@pytest.fixture(scope="module")
def multitask(tmp_path_factory):
    """configs/debug_multitask.yaml, tiny, trained one epoch: (config, last.ckpt)."""
    import yaml

    cwd = tmp_path_factory.mktemp("multitask")
    cfg = yaml.safe_load((ROOT / "configs/debug_multitask.yaml").read_text())
    cfg["trainer"].update(max_epochs=1, enable_model_summary=False, enable_progress_bar=False, log_every_n_steps=1)
    for task in cfg["data"]["init_args"]["tasks"].values():
        task["init_args"].update(n_train=64, n_val=32, n_test=32, batch_size=32)
    path = cwd / "debug_multitask.yaml"
    path.write_text(yaml.safe_dump(cfg))
    with contextlib.chdir(cwd):
        run_cli(["fit", "--config", str(path), "--plots=false"])
    return path, cwd / "runs/debug_multitask/version_0/checkpoints/last.ckpt"


def test_a_checkpoint_of_another_module_class_is_refused(trained, multitask, tmp_path, monkeypatch):
    """A MultiTaskModule's checkpoint given to a TaskModule config replaced the config's model
    without a word (NaN losses, exit 0); the reverse failed on a dataloader_idx. Both name the
    two classes."""
    config, mt_ckpt = multitask
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointMismatchError) as e:
        run_cli(["test", *TINY, "--ckpt_path", str(mt_ckpt)])
    assert f"checkpoint {mt_ckpt} does not match this config" in str(e.value)
    assert "model.class_path: checkpoint has 'vecset.pipelines.MultiTaskModule', the config has " \
           "'vecset.pipelines.TaskModule'" in str(e.value)
    with pytest.raises(CheckpointMismatchError) as e:
        run_cli(["test", "--config", str(config), "--plots=false", "--ckpt_path", _last(trained)])
    assert "model.class_path: checkpoint has 'vecset.pipelines.TaskModule', the config has " \
           "'vecset.pipelines.MultiTaskModule'" in str(e.value)
    assert "init_args" not in str(e.value)  # the arguments of another class are not compared


def test_check_checkpoint_compares_the_module_class(multitask):
    from vecset.backbone import Backbone
    from vecset.encoders import VectorEncoder
    from vecset.heads import LabelingHead
    from vecset.pipelines import TaskModule

    model = TaskModule(VectorEncoder(2, 32), Backbone(32, 2, 4, mlp_ratio=2.0), LabelingHead(32, 2))
    with pytest.raises(CheckpointMismatchError, match=r"model.class_path: checkpoint has 'vecset.pipelines.MultiTaskModule', "
                                                      r"the config has 'vecset.pipelines.training.task.TaskModule'"):
        check_checkpoint(multitask[1], model)


def _edited_checkpoint(src: str, dst: Path, edit) -> Path:
    ckpt = torch.load(src, map_location="cpu", weights_only=True)
    edit(ckpt)
    torch.save(ckpt, dst)
    return dst


def test_a_class_path_that_no_longer_imports_is_named(trained, tmp_path, monkeypatch):
    """One path per class, no compatibility names: a checkpoint whose config names the module as
    `pipelines.TaskModule` (from before the vecset. namespace) is refused, naming both paths."""

    def old_names(d):
        if isinstance(d, dict):
            return {k: v.removeprefix("vecset.") if k in ("class_path", "_class_path") else old_names(v)
                    for k, v in d.items()}
        return d

    old = _edited_checkpoint(_last(trained), tmp_path / "old.ckpt",
                             lambda c: c.update(hyper_parameters=old_names(c["hyper_parameters"])))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointMismatchError, match=r"model.class_path: checkpoint has 'pipelines.TaskModule'"):
        run_cli(["test", *TINY, "--ckpt_path", str(old)])


def test_renamed_parameters_are_named_with_the_file(trained, tmp_path, monkeypatch):
    """A checkpoint whose config matches but whose parameter names differ (code that named a
    module otherwise) ended in torch's raw missing/unexpected keys without the file."""
    from vecset.pipelines.training.checkpoint_fit import CheckpointMismatchError

    renamed = _edited_checkpoint(_last(trained), tmp_path / "renamed.ckpt", lambda c: c.update(
        state_dict={k.replace("backbone.blocks.", "backbone.layers."): v for k, v in c["state_dict"].items()}))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointMismatchError) as e:
        run_cli(["test", *TINY, "--ckpt_path", str(renamed)])
    msg = str(e.value)
    assert msg.startswith(f"the weights in checkpoint {renamed} do not fit the model of this config"), msg
    assert "model parameters are not in the checkpoint: backbone.blocks.0." in msg
    assert "checkpoint parameters are not in the model: backbone.layers.0." in msg


class _RunsCode:
    """Pickles as a call of open(marker, "w"): loading it without weights_only creates the file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


def test_a_checkpoint_that_would_run_code_is_refused_naming_the_file(tmp_path, monkeypatch):
    from vecset.backbone import Backbone
    from vecset.encoders import VectorEncoder
    from vecset.heads import LabelingHead
    from vecset.pipelines import AtomicCheckpointIO, TaskModule
    from vecset.pipelines.training.checkpoint_files import UnsafeCheckpointError

    marker = tmp_path / "code-ran"
    evil = tmp_path / "evil.ckpt"
    torch.save({"state_dict": {}, "hyper_parameters": {}, "payload": _RunsCode(marker)}, evil)
    monkeypatch.chdir(tmp_path)
    model = TaskModule(VectorEncoder(2, 32), Backbone(32, 2, 4), LabelingHead(32, 2))
    for load in (lambda: run_cli(["test", *TINY, "--ckpt_path", str(evil)]),
                 lambda: check_checkpoint(evil, model),
                 lambda: AtomicCheckpointIO().load_checkpoint(evil)):
        with pytest.raises(UnsafeCheckpointError) as e:
            load()
        msg = str(e.value)
        assert msg.startswith(f"{evil} was refused on purpose: loading it would run code stored in the file"), msg
        assert "(it refers to io.open, which a checkpoint has no need of)" in msg  # what torch would not load
        assert "weights_only` set to `False" not in msg and "weights_only=False" not in msg  # no advice to run it
        assert e.value.__cause__ is None and e.value.__suppress_context__  # nor in the traceback
    assert not marker.exists()


def test_the_configs_test_time_flip_is_kept_when_the_checkpoint_rebuilds_the_model(trained):
    """The model is rebuilt from the checkpoint's hyperparameters (trained without the flip), but
    ``test_time_flip`` is how it is evaluated: this run's value is used. The debug job's vectors
    are not images, so the flip, applied, refuses them by name."""
    cwd, _ = trained
    with contextlib.chdir(cwd), pytest.raises(ValueError, match=r"test_time_flip averages the outputs for images"):
        run_cli(["test", *TINY, "--model.init_args.test_time_flip=true", "--ckpt_path", _last(trained)])
    with contextlib.chdir(cwd):  # and without it, as trained
        cli = run_cli(["test", *TINY, "--ckpt_path", _last(trained)])
    assert cli.model.hparams.test_time_flip is False
