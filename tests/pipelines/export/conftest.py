"""The check every modality's export test makes: the .pt2 program and the ONNX model (through
onnxruntime) equal the PyTorch model on padded batches of several lengths."""

from __future__ import annotations

import pytest
import torch

from vecset.pipelines.export.program import (
    ServedModel,
    example_inputs,
    export_onnx,
    export_program,
    max_difference,
    run_onnx,
)


def _check(module, example: dict, batches: list[dict], tmp_path, onnx: bool = True, atol: float = 1e-5) -> ServedModel:
    """Export ``module`` traced on ``example``; compare on ``example`` and every batch."""
    served = ServedModel.of(module, example)
    program = export_program(served, example)
    path = export_onnx(served, example, tmp_path / "model.onnx") if onnx else None
    for batch in [example, *batches]:
        with torch.no_grad():
            ref = served(*example_inputs(served, batch))
            got = program.module()(*example_inputs(served, batch))
        assert max_difference(ref, got) <= atol, "the .pt2 program differs from the PyTorch model"
        if path is not None:
            assert max_difference(ref, run_onnx(path, batch, served.inputs)) <= atol, "ONNX differs"
    return served


@pytest.fixture
def check_exports(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    return lambda module, example, batches, **kw: _check(module, example, batches, tmp_path, **kw)


def padded(lengths: list[int], width: int, n: int | None = None, seed: int = 0) -> dict:
    """A batch of len(lengths) sets of ``width``-wide vectors, padded to ``n`` (the longest)."""
    g = torch.Generator().manual_seed(seed)
    n = n or max(lengths)
    mask = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]
    x = torch.randn(len(lengths), n, width, generator=g) * mask[..., None]
    return {"x": x, "mask": mask, "ids": torch.arange(len(lengths))}
