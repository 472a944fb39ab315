"""Warm start (pipelines/training/warm_start.py): loaded / new / skipped per part, freezing, the table."""

from __future__ import annotations

import pytest
import torch

from vecset.backbone import Backbone
from vecset.encoders.vector import VectorEncoder
from vecset.heads import LabelingHead
from vecset.pipelines import TaskModule
from vecset.pipelines.training.warm_start import warm_start_table


def _model(classes: int = 2, depth: int = 2, **kw) -> TaskModule:
    """A model warm-started from ``init_from`` (if given), as a fit from scratch does at its start."""
    model = TaskModule(VectorEncoder(2, 16), Backbone(16, depth, 4, mlp_ratio=2.0), LabelingHead(16, classes), **kw)
    model.apply_warm_start()
    return model


@pytest.fixture
def ckpt(tmp_path):
    torch.manual_seed(0)
    source = _model()
    path = tmp_path / "source.ckpt"
    torch.save({"state_dict": source.state_dict(), "epoch": 7, "optimizer_states": []}, path)
    return path, source


def test_a_whole_checkpoint_loads_every_part(ckpt, capsys):
    path, source = ckpt
    torch.manual_seed(1)
    model = _model(init_from=str(path))
    for k, v in source.state_dict().items():
        torch.testing.assert_close(model.state_dict()[k], v)
    report = model.warm_start_report
    assert {k: (len(r.loaded), len(r.new), len(r.skipped)) for k, r in report.items()} == {
        "encoder": (2, 0, 0), "backbone": (len(source.backbone.state_dict()), 0, 0), "head": (2, 0, 0)}
    out = capsys.readouterr().out
    assert out.count("warm start from") == 1 and "weights only" in out


def test_a_relative_init_from_is_found_in_the_shipped_data_from_any_folder(ckpt, tmp_path, monkeypatch):
    """A shipped config's ``init_from: data/molecules/<trunk>.ckpt`` is read from the shipped data
    (vecset/data/ in a wheel) when the working directory has no such file, as its CSV is; a file
    of that path in the working directory comes first."""
    import vecset.shipped

    path, source = ckpt
    shipped = tmp_path / "wheel"
    (shipped / "data" / "molecules").mkdir(parents=True)
    (shipped / "data" / "molecules" / "trunk.ckpt").write_bytes(path.read_bytes())
    monkeypatch.setattr(vecset.shipped, "shipped_root", lambda: shipped)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    torch.manual_seed(1)
    model = _model(init_from="data/molecules/trunk.ckpt")
    torch.testing.assert_close(model.encoder.proj.weight, source.encoder.proj.weight)
    (elsewhere / "data" / "molecules").mkdir(parents=True)  # the working directory's file wins
    torch.manual_seed(2)
    local = _model()
    torch.save({"state_dict": local.state_dict()}, elsewhere / "data" / "molecules" / "trunk.ckpt")
    model = _model(init_from="data/molecules/trunk.ckpt")
    torch.testing.assert_close(model.encoder.proj.weight, local.encoder.proj.weight)
    with pytest.raises(FileNotFoundError, match=r"model.init_from data/molecules/nope.ckpt: no such file .* or in the "
                                                r"shipped data"):
        _model(init_from="data/molecules/nope.ckpt")


def test_a_head_with_other_outputs_is_skipped_not_a_crash(ckpt):
    path, source = ckpt
    torch.manual_seed(1)
    fresh = _model(classes=5).head.state_dict()
    torch.manual_seed(1)
    model = _model(classes=5, init_from=str(path))
    head = model.warm_start_report["head"]
    assert len(head.loaded) == 0 and len(head.skipped) == 2 and head.new == []
    torch.testing.assert_close(model.head.state_dict(), fresh)  # its own initialization kept
    torch.testing.assert_close(model.encoder.proj.weight, source.encoder.proj.weight)
    text = warm_start_table(model.warm_start_report, str(path))
    assert "head skipped (shape differs): " in text and "(2, 16) -> (5, 16)" in text


def test_a_deeper_backbone_gets_new_blocks_and_init_parts_limits_the_load(ckpt):
    path, source = ckpt
    model = _model(depth=3, init_from=str(path), init_parts=["backbone"])
    bb = model.warm_start_report["backbone"]
    assert len(bb.new) > 0 and all(k.startswith("blocks.2.") or "norm" in k for k in bb.new)
    assert bb.values == sum(v.numel() for k, v in model.backbone.state_dict().items() if k in bb.loaded)
    assert not model.warm_start_report["encoder"].included and model.warm_start_report["encoder"].loaded == []
    assert not torch.equal(model.encoder.proj.weight, source.encoder.proj.weight)


def test_frozen_parts_get_no_gradient(ckpt):
    path, _ = ckpt
    model = _model(init_from=str(path), freeze=["encoder", "backbone"])
    batch = {"x": torch.randn(3, 5, 2), "mask": torch.ones(3, 5, dtype=torch.bool),
             "y": torch.randint(0, 2, (3, 5))}
    out = model(batch)
    model.head.loss(out, batch).backward()
    assert all(p.grad is None and not p.requires_grad for p in [*model.encoder.parameters(),
                                                                 *model.backbone.parameters()])
    assert all(p.grad is not None for p in model.head.parameters())
    assert "frozen" in warm_start_table(model.warm_start_report, str(path))


def test_the_table_text(ckpt):
    path, _ = ckpt
    model = _model(classes=3, init_from=str(path), freeze=["backbone"])
    lines = warm_start_table(model.warm_start_report, "x.ckpt").splitlines()
    assert lines[0].startswith("warm start from x.ckpt")
    assert lines[1].split() == ["part", "loaded", "new", "skipped", "values", "trained"]
    assert lines[2].split() == ["encoder", "2", "0", "0", "48", "yes"]
    assert lines[3].split()[-1] == "frozen" and lines[4].split()[:4] == ["head", "0", "0", "2"]


def test_bad_names_and_a_checkpoint_with_nothing_matching_are_errors(ckpt, tmp_path):
    path, _ = ckpt
    with pytest.raises(ValueError, match=r"init_parts names \['decoder'\]"):
        _model(init_from=str(path), init_parts=["decoder"])
    with pytest.raises(ValueError, match="needs init_from"):
        _model(init_parts=["head"])
    other = tmp_path / "other.ckpt"
    torch.save({"state_dict": {"model.w": torch.zeros(3)}}, other)
    with pytest.raises(ValueError, match=r"no tensor of init_parts .* matches this checkpoint\n.*the checkpoint's "
                                         r"prefixes are \['model'\]"):
        _model(init_from=str(other))


def test_construction_reads_no_checkpoint(tmp_path):
    """init_from is read when a fit starts from scratch, not when the model is built: a run whose
    init_from file is gone still builds (to test, export or resume it from its own checkpoint)."""
    model = TaskModule(VectorEncoder(2, 16), Backbone(16, 2, 4, mlp_ratio=2.0), LabelingHead(16, 2),
                       init_from=str(tmp_path / "moved.ckpt"), init_parts=["backbone"], freeze=["encoder"])
    assert model.warm_start_report is None
    assert not any(p.requires_grad for p in model.encoder.parameters())  # freeze holds from the start
    with pytest.raises(FileNotFoundError, match=r"^model.init_from .*moved.ckpt: no such file \(the checkpoint a fit"):
        model.apply_warm_start()


def test_empty_init_parts_is_refused_naming_the_field(ckpt):
    path, _ = ckpt
    with pytest.raises(ValueError) as e:
        _model(init_from=str(path), init_parts=[])
    assert str(e.value).splitlines()[0].startswith("model.init_parts is empty: name the parts init_from loads, "
                                                   "of ['encoder', 'backbone', 'head']")


def test_a_checkpoint_of_another_job_says_which_job_and_what_was_expected(tmp_path):
    """A checkpoint of another job shares no tensor name: the message names its run, its module,
    encoder and head classes, and the tensors expected."""
    path = tmp_path / "runs" / "pretrain_text" / "version_2" / "checkpoints" / "last.ckpt"
    path.parent.mkdir(parents=True)
    torch.save({"state_dict": {"embed.weight": torch.zeros(3, 4)},
                "hyper_parameters": {"_class_path": "vecset.pipelines.TaskModule",
                                     "encoder": {"class_path": "vecset.encoders.TokenEncoder", "init_args": {}},
                                     "head": {"class_path": "vecset.heads.SequenceHead", "init_args": {}}}}, path)
    with pytest.raises(ValueError) as e:
        _model(init_from=str(path), init_parts=["encoder", "backbone"])
    first, second = str(e.value).splitlines()[:2]
    assert first == (f"model.init_from {path}: no tensor of init_parts ['encoder', 'backbone'] matches this "
                     "checkpoint (job 'pretrain_text' (version_2), a TaskModule, encoder TokenEncoder, head SequenceHead)")
    assert second.startswith("expected tensors named backbone.*, encoder.* with this model's names and shapes; "
                             "the checkpoint's prefixes are ['embed']")


def test_freezing_every_part_is_refused_at_fit_setup():
    model = _model(freeze=["encoder", "backbone", "head"])
    with pytest.raises(ValueError) as e:
        model.setup("fit")
    assert str(e.value).splitlines()[0].startswith(
        "model.freeze=['encoder', 'backbone', 'head'] leaves nothing to train")
    _model(freeze=["encoder", "backbone"]).setup("fit")  # the head trains


def _multi(**kw):
    from vecset.heads import SequenceHead
    from vecset.pipelines import MultiTaskModule

    model = MultiTaskModule(Backbone(16, 2, 4, mlp_ratio=2.0), {"a": VectorEncoder(2, 16), "b": VectorEncoder(2, 16)},
                            {"a": LabelingHead(16, 2), "b": SequenceHead(16, 1, task="regression")}, **kw)
    model.apply_warm_start()
    return model


def test_a_multi_task_model_starts_from_a_single_task_checkpoint(ckpt):
    """Every task's encoder from the checkpoint's encoder, the shared backbone from its backbone,
    the heads left as initialized; freeze takes the same names."""
    path, source = ckpt
    model = _multi(init_from=str(path), init_parts=["encoder", "backbone"], freeze=["backbone"])
    report = model.warm_start_report
    assert list(report) == ["backbone", "encoders.a", "encoders.b", "heads.a", "heads.b"]
    for t in ("a", "b"):
        torch.testing.assert_close(model.encoders[t].state_dict(), source.encoder.state_dict())
        assert not report[f"heads.{t}"].included
    torch.testing.assert_close(model.backbone.state_dict(), source.backbone.state_dict())
    assert report["backbone"].frozen and not any(p.requires_grad for p in model.backbone.parameters())
    with pytest.raises(ValueError, match=r"^model.init_parts names 'decoder'; the parts are \['backbone', "):
        _multi(init_from=str(path), init_parts=["decoder"])


def test_a_multi_task_model_starts_from_a_multi_task_checkpoint(tmp_path):
    torch.manual_seed(0)
    source = _multi()
    path = tmp_path / "multi.ckpt"
    torch.save({"state_dict": source.state_dict()}, path)
    torch.manual_seed(1)
    model = _multi(init_from=str(path), init_parts=["heads.b", "encoders.a"])
    torch.testing.assert_close(model.heads["b"].state_dict(), source.heads["b"].state_dict())
    torch.testing.assert_close(model.encoders["a"].state_dict(), source.encoders["a"].state_dict())
    assert not torch.equal(model.encoders["b"].proj.weight, source.encoders["b"].proj.weight)
    assert [n for n, r in model.warm_start_report.items() if r.included] == ["encoders.a", "heads.b"]
