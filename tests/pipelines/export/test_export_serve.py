"""``ExportedModel``: an export directory served with its inputs checked against export.json,
where the ONNX graph alone runs a wrong image size or fails on an internal node's name."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import padded

from vecset.backbone import Backbone
from vecset.encoders import PatchEncoder, VectorEncoder
from vecset.heads import LabelingHead, SequenceHead
from vecset.pipelines import TaskModule
from vecset.pipelines.export.command import describe
from vecset.pipelines.export.program import ServedModel, export_onnx, run_onnx
from vecset.pipelines.export.serve import ExportedModel, ExportInputError


def onnx_export(model: TaskModule, example: dict, out) -> ServedModel:
    """``model.onnx`` and export.json (as vecset export writes them) in ``out``."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    served = ServedModel.of(model, example)
    export_onnx(served, example, out / "model.onnx")
    (out / "export.json").write_text(json.dumps(describe(served, example)))
    return served


def test_onnx_image_of_another_size_is_refused_by_name(tmp_path):
    torch.manual_seed(0)
    model = TaskModule(PatchEncoder(1, 16, 2), Backbone(16, 1, 2, 2.0), SequenceHead(16, 3)).eval()
    served = onnx_export(model, {"image": torch.rand(3, 1, 8, 8)}, tmp_path)
    odd = {"image": torch.rand(2, 1, 9, 8)}
    run_onnx(tmp_path / "model.onnx", odd, ["image"])  # onnxruntime alone runs it (the last row dropped)
    served_onnx = ExportedModel(tmp_path, backend="onnx")
    with pytest.raises(ExportInputError, match=r"^input 'image': height 9 pixels, expected a multiple of 2 from 4 "
                                               r"\(export.json inputs.image.sides\)$"):
        served_onnx(image=odd["image"])
    good = torch.rand(2, 1, 12, 8)
    with torch.no_grad():
        assert torch.allclose(torch.as_tensor(served_onnx(image=good)["logits"]), served(good)[0], atol=1e-5)


def test_onnx_x_and_mask_of_different_set_sizes_are_refused_by_name(tmp_path):
    torch.manual_seed(0)
    model = TaskModule(VectorEncoder(2, 16), Backbone(16, 1, 2, 2.0), LabelingHead(16, 2))
    onnx_export(model, padded([7, 7, 3], 2), tmp_path)
    served_onnx = ExportedModel(tmp_path, backend="onnx")
    b = padded([9, 4], 2)
    with pytest.raises(ExportInputError, match=r"^input 'mask': dim 1 \(set_size\) is 8, but 'x' dim 1 \(set_size\) is 9"):
        served_onnx(x=b["x"], mask=b["mask"][:, :8])
    with pytest.raises(ExportInputError, match=r"^input 'x': expected dtype float32, got float64$"):
        served_onnx(x=b["x"].double().numpy(), mask=b["mask"].numpy())
    assert served_onnx(x=b["x"], mask=b["mask"])["logits"].shape == (2, 9, 2)


def pt2_export(model: TaskModule, example: dict, out) -> ServedModel:
    """``model.pt2`` and export.json (as vecset export writes them) in ``out``."""
    from vecset.pipelines.export.program import export_program

    served = ServedModel.of(model, example)
    torch.export.save(export_program(served, example), out / "model.pt2")
    (out / "export.json").write_text(json.dumps(describe(served, example)))
    return served


def test_pt2_takes_numpy_arrays_and_refuses_a_set_without_a_real_vector(tmp_path):
    """Issue 57: the pt2 backend given numpy arrays raised "TypeError: 'int' object is not
    callable" (onnx takes them); a mask row of all False gave NaN logits without a word."""
    torch.manual_seed(0)
    model = TaskModule(VectorEncoder(2, 16), Backbone(16, 1, 2, 2.0), LabelingHead(16, 2))
    served = pt2_export(model, padded([7, 7, 3], 2), tmp_path)
    pt2 = ExportedModel(tmp_path)
    b = padded([9, 4], 2)
    with torch.no_grad():
        ref = served(b["x"], b["mask"])[0]
    got = pt2(x=b["x"].numpy(), mask=b["mask"].numpy())["logits"]
    assert torch.is_tensor(got) and torch.allclose(got, ref, atol=1e-6)
    empty = b["mask"].clone()
    empty[1] = False
    with pytest.raises(ExportInputError, match=r"^input 'mask': set 1 of 2 has no real vector \(its row is all False; "
                                               r"its outputs would be NaN\)"):
        pt2(x=b["x"], mask=empty)
    with pytest.raises(ExportInputError, match=r"^input 'mask': set 1 of 2 has no real vector"):
        pt2(x=b["x"].numpy(), mask=empty.numpy())
