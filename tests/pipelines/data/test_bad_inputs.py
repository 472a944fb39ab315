"""Bad inputs to the foundation's debug job get a clear error naming what is wrong, not a
traceback from deep inside torch (the issue's bad-input suite; other jobs add their cases)."""

from __future__ import annotations

import re

import pytest
import torch

from vecset.backbone import Backbone, VectorSet
from vecset.encoders import VectorEncoder
from vecset.encoders.collate import pad_sets
from vecset.heads import LabelingHead
from vecset.pipelines.data.synthetic import SyntheticSetDataModule


def item(x, y=None, i=0):
    return {"x": x, "y": torch.zeros(len(x), dtype=torch.long) if y is None else y, "id": i}


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4)])
def test_set_that_is_not_a_list_of_vectors(shape):
    want = f"sample id=3 must be an (n, F) tensor of vectors, got shape {shape}"
    with pytest.raises(ValueError, match=re.escape(want)):
        pad_sets([item(torch.ones(2, 4)), item(torch.ones(*shape), y=torch.zeros(1, dtype=torch.long), i=3)])


def test_sets_of_different_widths():
    with pytest.raises(ValueError, match=r"sample id=1 has vectors of width 3, sample id=0 of width 2"):
        pad_sets([item(torch.ones(2, 2)), item(torch.ones(2, 3), i=1)])


def test_encoder_width_mismatch():
    enc = VectorEncoder(in_dim=2, d_model=8)
    b = pad_sets([item(torch.ones(3, 5))])
    with pytest.raises(ValueError, match="VectorEncoder expects vectors of width in_dim=2, got 5"):
        enc(b)


def test_backbone_width_mismatch():
    with pytest.raises(ValueError, match="Backbone expects vectors of width d_model=8, got 4"):
        Backbone(d_model=8, depth=1, heads=2)(VectorSet.from_list([torch.ones(2, 4)]))


def test_label_out_of_range():
    head = LabelingHead(8, num_classes=2)
    b = pad_sets([item(torch.ones(3, 2), y=torch.tensor([0, 1, 2]))])
    with pytest.raises(ValueError, match=r"label out of range: targets span \[0, 2\] but LabelingHead has num_classes=2"):
        head.check_batch(b)


def test_bad_set_sizes_in_the_debug_datamodule():
    with pytest.raises(ValueError, match="need 1 <= min_len <= max_len, got min_len=0, max_len=4"):
        SyntheticSetDataModule(min_len=0, max_len=4)


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_an_empty_split_of_the_debug_datamodule_is_refused(split):
    """``n_train 0`` exited 0 with the test results of an untrained model."""
    with pytest.raises(ValueError, match=rf"^SyntheticSetDataModule: n_{split} must be >= 1 \(sets in the {split} "
                                         rf"split\), got 0$"):
        SyntheticSetDataModule(**{f"n_{split}": 0})
