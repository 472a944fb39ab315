"""The optional abilities (contracts/abilities.py): which of vecset's parts declare each, that a
part of one's own declares one by its members alone, and what the pipelines do with them."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from vecset.backbone import Backbone
from vecset.backbone.baselines import BiLSTM, GridResNet, WindowMLP
from vecset.contracts.abilities import (
    AttentionWeights,
    Decoder,
    Grid,
    ImageSides,
    MaxSetSize,
    MeanStd,
    NotExported,
    PoolingWeights,
    ReceptiveField,
    SetsWindow,
    TaskKind,
    Tokenizes,
    Width,
    WindowedReceptiveField,
    has_cls,
    pools_by_attention,
    regression_std,
    task_kind,
)
from vecset.encoders import PatchEncoder, PixelEncoder, SpeechEncoder, TextEncoder, VectorEncoder
from vecset.heads import LabelingHead, SequenceHead
from vecset.pipelines.training.receptive_field import receptive_field


def test_receptive_field():
    assert isinstance(SpeechEncoder(40, 16, conv_kernel=3), ReceptiveField)
    assert isinstance(LabelingHead(16, 5), ReceptiveField)
    assert not isinstance(VectorEncoder(2, 16), ReceptiveField)
    assert not isinstance(SequenceHead(16, 2), ReceptiveField)  # a pooling head reads every vector


def test_image_sides():
    assert PatchEncoder(1, 16, 4, stem_strides=[2], stem_channels=[4]).image_sides()["multiple_of"] == 8
    assert PixelEncoder(3, 16, positional="learned", max_h=6, max_w=5).image_sides()["max_width"] == 5
    assert not isinstance(VectorEncoder(2, 16), ImageSides)


def test_max_set_size():
    assert VectorEncoder(2, 16, positional="learned", max_len=7).max_set_size == 7
    assert isinstance(TextEncoder(16), MaxSetSize) and TextEncoder(16).max_set_size is None  # sinusoidal
    assert SpeechEncoder(40, 16, positional="learned", max_len=50).max_set_size == 50


def test_tokenizes():
    assert isinstance(TextEncoder(16), Tokenizes)  # strings, or their ids (export)
    assert not isinstance(VectorEncoder(2, 16), Tokenizes)


def test_windowed_receptive_field_and_window():
    assert isinstance(Backbone(16, depth=1, heads=2), WindowedReceptiveField)
    assert isinstance(WindowMLP(16, context=2), WindowedReceptiveField)
    assert not isinstance(BiLSTM(16, 8, 1), WindowedReceptiveField)
    assert isinstance(SpeechEncoder(40, 16, window=4), SetsWindow)
    assert not isinstance(PatchEncoder(1, 16, 2), SetsWindow)


def test_width():
    for backbone in (Backbone(16, depth=1, heads=2), WindowMLP(16), BiLSTM(16, 8, 1)):
        assert isinstance(backbone, Width) and backbone.d_model == 16
    assert not isinstance(nn.Identity(), Width)


def test_grid():
    assert isinstance(PatchEncoder(1, 16, 2), Grid) and PatchEncoder(1, 16, 2).grid(8, 6) == (4, 3)
    assert isinstance(PixelEncoder(1, 16), Grid)
    assert not isinstance(SpeechEncoder(40, 16), Grid)


def test_attention_weights():
    bb = Backbone(16, depth=2, heads=2, cls_token=True)
    assert isinstance(bb, AttentionWeights) and has_cls(bb)
    assert not has_cls(Backbone(16, depth=1, heads=2))
    for baseline in (WindowMLP(16), BiLSTM(16, 8, 1), GridResNet(16, widths=(8,), blocks=1)):
        assert not isinstance(baseline, AttentionWeights) and not has_cls(baseline)


def test_pooling_weights():
    head = SequenceHead(16, 2, pooling="attention")
    assert isinstance(head, PoolingWeights) and pools_by_attention(head)
    assert isinstance(SequenceHead(16, 2), PoolingWeights) and not pools_by_attention(SequenceHead(16, 2))
    assert not isinstance(LabelingHead(16, 2), PoolingWeights) and not pools_by_attention(LabelingHead(16, 2))


def test_decoder():
    assert isinstance(LabelingHead(16, 5), Decoder) and LabelingHead(16, 5).segment_decoder() is None
    assert isinstance(SequenceHead(16, 2), Decoder)  # the Head contract's default: none
    assert not isinstance(nn.Linear(2, 2), Decoder)


def test_mean_std_and_task_kind():
    reg = SequenceHead(16, 1, task="regression", regression_loss="gaussian_nll")
    assert isinstance(reg, MeanStd) and regression_std(reg) and task_kind(reg) == "regression"
    cls = SequenceHead(16, 3)
    assert isinstance(cls, TaskKind) and not regression_std(cls) and task_kind(cls) == "classification"
    assert task_kind(LabelingHead(16, 3)) == "labeling" and not regression_std(LabelingHead(16, 3))
    assert not isinstance(nn.Linear(2, 2), TaskKind) and task_kind(nn.Linear(2, 2)) is None


class Conv3(nn.Module):
    """A part of one's own, no vecset base class: declares its receptive field by its members."""

    receptive_field = 1

    def __init__(self) -> None:
        super().__init__()
        self.window = None


@pytest.mark.parametrize("window,expected", [(None, 1 + 2 * 3 + 0), (2, 1 + 2 * 2 + 0)])
def test_a_part_declares_an_ability_by_its_members(window, expected):
    enc = Conv3()
    enc.window = window
    assert isinstance(enc, ReceptiveField) and isinstance(enc, SetsWindow)
    assert receptive_field(enc, Backbone(8, depth=2, heads=2, window=3), LabelingHead(8, 2)) == expected
    assert receptive_field(enc, Backbone(8, depth=2, heads=2), LabelingHead(8, 2)) == (None if window is None
                                                                                       else 1 + 2 * window)
    assert receptive_field(VectorEncoder(2, 8), Backbone(8, depth=1, heads=2, window=3), LabelingHead(8, 2)) is None


def test_set_size_reads_the_declared_grid(monkeypatch):
    """A backbone without attention is not checked; the suggestion steps in the encoder's pixels
    per vector (patch x stem strides), read from its grid."""
    from vecset.pipelines.data.base import VecsetDataModule
    from vecset.pipelines.training.set_size import check_set_size

    monkeypatch.setattr("vecset.pipelines.training.set_size.available_memory", lambda device: 2**20)

    def images(side: int) -> VecsetDataModule:  # the data module contract declares image_shape, batch_size
        dm = VecsetDataModule()
        dm.image_shape, dm.batch_size = (1, side, side), 1
        return dm

    dm = images(256)
    check_set_size(PatchEncoder(1, 8, 2), WindowMLP(8), dm, torch.device("cpu"))  # no attention: nothing to hold
    enc = PatchEncoder(1, 8, 2, stem_channels=[4], stem_strides=[2])
    with pytest.raises(MemoryError, match=r"a 64x64 grid.*e\.g\. \[(\d+), \1\]") as e:
        check_set_size(enc, Backbone(8, depth=1, heads=2), dm, torch.device("cpu"))
    side = int(str(e.value).split("(e.g. [")[1].split(",")[0])
    assert side % 4 == 0  # a whole number of 4-pixel steps (patch 2 x stride 2)
    check_set_size(enc, Backbone(8, depth=1, heads=2), images(side), torch.device("cpu"))


ABILITIES = (AttentionWeights, Decoder, Grid, ImageSides, MaxSetSize, MeanStd, NotExported, PoolingWeights,
             ReceptiveField, SetsWindow, TaskKind, Tokenizes, Width, WindowedReceptiveField)


def _members(proto: type) -> set[str]:
    """A protocol's own members, as ``typing`` collects them for ``isinstance``."""
    return {n for n in proto.__dict__ if not n.startswith("_")} | set(getattr(proto, "__annotations__", {}))


def test_members_are_found_statically_for_every_shipped_part():
    """From Python 3.12 ``isinstance`` looks a protocol's members up with ``inspect.getattr_static``,
    which misses what nn.Module keeps in ``_modules`` / ``_parameters`` (so 3.12 once said a
    Backbone had no AttentionWeights and the speech attention report silently wrote nothing, seen
    on a GPU machine's Python 3.12). CI runs 3.11: this checks the 3.12 look-up on every part of
    every shipped config, wherever the plain ``hasattr`` look-up says the part has the ability."""
    import inspect
    from pathlib import Path

    from vecset.pipelines.cli import run_cli

    configs = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))
    checked = 0
    for config in configs:
        # image_folder.yaml's root is a placeholder: its class count (read from the folders) is given here
        classes = ["--model.init_args.head.init_args.num_outputs=3"] if config.stem == "image_folder" else []
        model = run_cli(["--config", str(config), "--trainer.logger=false", *classes], run=False).model
        for name, part in model.named_modules():
            for proto in ABILITIES:
                members = _members(proto)
                if not all(hasattr(part, m) for m in members):
                    continue
                missing = []
                for m in sorted(members):
                    try:
                        inspect.getattr_static(part, m)
                    except AttributeError:
                        missing.append(m)
                assert not missing, f"{config.name}: {name or 'model'} ({type(part).__name__}) has {proto.__name__} " \
                                    f"by hasattr, but Python 3.12's isinstance cannot find {missing}"
                checked += 1
    assert len(configs) >= 20 and checked >= 50


def test_cls_backbone_keeps_attention_weights_statically():
    import inspect

    bb = Backbone(16, depth=1, heads=2, cls_token=True)
    for m in _members(AttentionWeights):
        inspect.getattr_static(bb, m)  # raises AttributeError where 3.12's isinstance would say no
    assert has_cls(bb)
