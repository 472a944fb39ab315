"""Export of image classifiers: the batch axis and the image's height and width are dynamic
(the set size follows them: H*W pixels or (H/P)*(W/P) patches), within what the encoder takes
(``image_sides``: multiples of the patch, a learned table's size)."""

from __future__ import annotations

import pytest
import torch

from vecset.backbone import Backbone
from vecset.encoders import PatchEncoder, PixelEncoder
from vecset.heads import SequenceHead
from vecset.pipelines import TaskModule
from vecset.pipelines.export.program import export_program, image_sides, input_axes


def images(b: int, h: int, w: int, seed: int, c: int = 1) -> dict:
    return {"image": torch.rand(b, c, h, w, generator=torch.Generator().manual_seed(seed)), "ids": torch.arange(b)}


def test_digits_like_classifier_export_equals_pytorch_on_two_image_sizes(check_exports):
    # patches, a convolutional stem, sinusoidal 2-D positions, a CLS token
    torch.manual_seed(0)
    model = TaskModule(PatchEncoder(1, 16, 2, stem_channels=[4]), Backbone(16, 1, 2, 2.0, cls_token=True),
                       SequenceHead(16, 10, pooling="cls"))
    model.encoder.stem.eval()  # BatchNorm: its running statistics
    served = check_exports(model, images(3, 8, 8, 0), [images(2, 12, 6, 2), images(1, 4, 16, 3)])
    assert served.inputs == ["image"] and served.outputs == ["logits"]
    assert input_axes(served, images(3, 8, 8, 0)) == {"image": {0: "batch", 2: "height", 3: "width"}}
    sides = image_sides(served)
    assert {k: sides[k] for k in ("multiple_of", "max_height", "min_height", "min_width")} == {
        "multiple_of": 2, "max_height": None, "min_height": 4, "min_width": 4} and "pad" not in sides


def test_learned_table_bounds_the_exported_sizes_and_others_are_refused(check_exports):
    # pixels with a learned 6x5 position table: images up to 6x5 pixels, any side from 2
    torch.manual_seed(0)
    model = TaskModule(PixelEncoder(3, 16, positional="learned", max_h=6, max_w=5), Backbone(16, 1, 2, 2.0),
                       SequenceHead(16, 4, pooling="attention"))
    served = check_exports(model, images(3, 4, 3, 0, c=3), [images(2, 6, 5, 1, c=3), images(4, 2, 4, 2, c=3)])
    assert image_sides(served)["max_height"] == 6 and image_sides(served)["max_width"] == 5
    program = export_program(served, images(3, 4, 3, 0, c=3))
    with pytest.raises(Exception, match=r"Guard failed: .*size\(\)\[2\] <= 6"):
        program.module()(images(2, 7, 5, 3, c=3)["image"])  # taller than the table


def test_patch_sides_must_be_multiples_even_where_the_encoder_pads():
    # P = patch 2 x a stride-2 stem = 4 pixels a side; the encoder's pad is not in the graph
    from vecset.pipelines.export.program import ServedModel

    torch.manual_seed(0)
    model = TaskModule(PatchEncoder(1, 16, 2, pad=True, stem_channels=[4], stem_strides=[2]).eval(),
                       Backbone(16, 1, 2, 2.0), SequenceHead(16, 3))
    served = ServedModel.of(model, images(3, 8, 12, 0))
    assert image_sides(served)["multiple_of"] == 4 and "pad before" in image_sides(served)["pad"]
    program = export_program(served, images(3, 8, 12, 0))
    assert torch.allclose(program.module()(images(2, 16, 8, 1)["image"])[0],
                          served(images(2, 16, 8, 1)["image"])[0], atol=1e-5)
    with pytest.raises(Exception, match=r"Guard failed: .*size\(\)\[3\] % 4 == 0"):
        program.module()(images(2, 8, 10, 2)["image"])
    with pytest.raises(ValueError, match="export needs sides of >= 2 vectors"):
        export_program(served, images(3, 4, 8, 0))


def test_grid_resnet_is_refused_with_the_reason():
    # configs/fashion_mnist_cnn.yaml's backbone: its grid comes from the positions' values
    from vecset.backbone import GridResNet
    from vecset.backbone.tracing import NotExportable
    from vecset.pipelines.export.program import ServedModel

    torch.manual_seed(0)
    model = TaskModule(PixelEncoder(1, 16, positional="none"), GridResNet(16, (8,), 1), SequenceHead(16, 3))
    served = ServedModel.of(model, images(3, 4, 4, 0))
    with pytest.raises(NotExportable, match="GridResNet finds its grid from the vectors' positions"):
        export_program(served, images(3, 4, 4, 0))
