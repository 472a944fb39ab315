"""Export of an image classifier (patches, a convolutional stem, sinusoidal 2-D positions, a CLS
token): the batch axis is dynamic, the image size fixed."""

from __future__ import annotations

import torch

from vecset.backbone import Backbone
from vecset.encoders import PatchEncoder
from vecset.heads import SequenceHead
from vecset.pipelines import TaskModule
from vecset.pipelines.export.program import input_axes


def test_digits_like_classifier_export_equals_pytorch(check_exports):
    torch.manual_seed(0)
    model = TaskModule(PatchEncoder(1, 16, 2, stem_channels=[4]), Backbone(16, 1, 2, 2.0, cls_token=True),
                       SequenceHead(16, 10, pooling="cls"))
    model.encoder.stem.eval()  # BatchNorm: its running statistics
    images = lambda b, seed: {"image": torch.rand(b, 1, 8, 8, generator=torch.Generator().manual_seed(seed)),  # noqa: E731
                              "ids": torch.arange(b)}
    served = check_exports(model, images(3, 0), [images(5, 1), images(1, 2)])
    assert served.inputs == ["image"] and served.outputs == ["logits"]
    assert input_axes(served, images(3, 0)) == {"image": {0: "batch"}}
