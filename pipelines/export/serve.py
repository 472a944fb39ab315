"""An export directory's model, served with its inputs checked: ``ExportedModel(DIR)`` loads
``model.pt2`` (or ``model.onnx`` through onnxruntime) and ``export.json``, and refuses an input
whose name, dtype or shape the exported graph was not made for, naming the input and what was
expected. The graphs themselves check little: onnxruntime fails on an internal node's name (x
and mask of different set sizes) or runs an image of another size through a fixed-size model,
and the .pt2 program names no input when given float64.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

SET_SIZE, HEIGHT, WIDTH = "set_size", "height", "width"


class ExportInputError(ValueError):
    """An input the exported model was not made for (the first line names it and what was expected)."""


def _dtype(value: Any) -> str:
    return str(value.dtype).removeprefix("torch.")  # torch.float32 -> float32; numpy's float32 as it is


def check_inputs(spec: dict, inputs: dict[str, Any]) -> None:
    """Raise ``ExportInputError`` unless ``inputs`` (tensors or numpy arrays, by name) fit
    ``spec`` (``export.json``): the names, each input's dtype and rank, its fixed sizes, one
    size per dynamic axis across the inputs (the batch, the set size), the set size within
    ``max_set_size`` and an image's sides within ``inputs.image.sides``."""
    want = list(spec["inputs"])
    if sorted(inputs) != sorted(want):
        raise ExportInputError(f"inputs: expected {', '.join(want)} (export.json), got {', '.join(inputs) or 'none'}")
    seen: dict[str, tuple[str, int, int]] = {}  # axis name -> (input, dim, size) where first seen
    for name in want:
        value, info = inputs[name], spec["inputs"][name]
        if not hasattr(value, "shape") or not hasattr(value, "dtype"):
            raise ExportInputError(f"input {name!r}: expected a tensor or numpy array, got {type(value).__name__}")
        if _dtype(value) != info["dtype"]:
            raise ExportInputError(f"input {name!r}: expected dtype {info['dtype']}, got {_dtype(value)}")
        shape, traced = tuple(value.shape), info["shape"]
        axes = {int(d): a for d, a in info["dynamic_axes"].items()}
        if len(shape) != len(traced):
            raise ExportInputError(f"input {name!r}: expected {len(traced)} dims "
                                   f"({_described(traced, axes)}), got shape {list(shape)}")
        for d, size in enumerate(shape):
            axis = axes.get(d)
            if axis is None and size != traced[d]:
                raise ExportInputError(f"input {name!r}: dim {d} must be {traced[d]} (fixed in the exported model: "
                                       f"{_described(traced, axes)}), got shape {list(shape)}")
            if axis is None:
                continue
            first = seen.setdefault(axis, (name, d, size))
            if first[2] != size:
                raise ExportInputError(f"input {name!r}: dim {d} ({axis}) is {size}, but {first[0]!r} dim {first[1]} "
                                       f"({axis}) is {first[2]}: they must be equal")
    mask = inputs.get("mask")  # (B, N) True where a vector is real
    if mask is not None and spec["inputs"]["mask"]["dtype"] == "bool" and len(mask.shape) == 2:
        # a set without a real vector: attention has no key to weigh, and its outputs come back NaN
        empty = [i for i, real in enumerate(mask.any(1).tolist()) if not real]
        if empty:
            shown = ", ".join(map(str, empty[:8])) + (" ..." if len(empty) > 8 else "")
            raise ExportInputError(f"input 'mask': set {shown} of {mask.shape[0]} has no real vector (its row is all "
                                   "False; its outputs would be NaN): every set needs at least one True")
    top = spec.get("max_set_size")
    if top is not None and SET_SIZE in seen and seen[SET_SIZE][2] > top:
        name, d, size = seen[SET_SIZE]
        raise ExportInputError(f"input {name!r}: dim {d} (set_size) is {size}, at most {top} (max_set_size: the "
                               "learned position table's length)")
    sides = next((i["sides"] for i in spec["inputs"].values() if "sides" in i), None)
    for axis in (HEIGHT, WIDTH) if sides is not None else ():
        if axis not in seen:
            continue
        name, d, size = seen[axis]
        p, low, high = sides["multiple_of"], sides[f"min_{axis}"], sides[f"max_{axis}"]
        if size % p or size < low or (high is not None and size > high):
            raise ExportInputError(f"input {name!r}: {axis} {size} pixels, expected a multiple of {p} from {low}"
                                   f"{f' to {high}' if high is not None else ''} (export.json inputs.{name}.sides)")


def _described(shape: list[int], axes: dict[int, str]) -> str:
    return "(" + ", ".join(axes.get(d, str(s)) for d, s in enumerate(shape)) + ")"


class ExportedModel:
    """``vecset export``'s output directory as a callable: ``ExportedModel(DIR)(x=..., mask=...)``
    -> the outputs by name (``export.json``'s ``outputs``), after ``check_inputs``.

    ``backend``: ``pt2`` (``torch.export.load``; tensors or numpy arrays in, tensors out) or
    ``onnx`` (onnxruntime on CPU; tensors or numpy arrays in, numpy arrays out)."""

    def __init__(self, directory: str | Path, backend: str = "pt2") -> None:
        directory = Path(directory)
        if not (directory / "export.json").is_file():
            raise FileNotFoundError(f"{directory}: no export.json (a directory written by vecset export expected)")
        self.spec = json.loads((directory / "export.json").read_text())
        self.inputs, self.outputs, self.backend = list(self.spec["inputs"]), list(self.spec["outputs"]), backend
        if backend == "pt2":
            self._run = torch.export.load(str(directory / "model.pt2")).module()
        elif backend == "onnx":
            import onnxruntime as ort

            session = ort.InferenceSession(str(directory / "model.onnx"), providers=["CPUExecutionProvider"])
            self._run = lambda *xs: session.run(None, {n: x for n, x in zip(self.inputs, xs, strict=True)})
        else:
            raise ValueError(f"backend must be 'pt2' or 'onnx', got {backend!r}")

    def __call__(self, **inputs: Any) -> dict[str, Any]:
        check_inputs(self.spec, inputs)
        if self.backend == "onnx":
            inputs = {n: v.cpu().numpy() if torch.is_tensor(v) else v for n, v in inputs.items()}
        else:  # the program takes tensors only (a numpy array reached it as a callable's argument)
            inputs = {n: v if torch.is_tensor(v) else torch.from_numpy(v) for n, v in inputs.items()}
        with torch.no_grad():
            out = self._run(*(inputs[n] for n in self.inputs))
        return dict(zip(self.outputs, out, strict=True))
