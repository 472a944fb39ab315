"""A TaskModule's encoder -> backbone -> head as one graph on named tensors, exported with
``torch.export`` (a .pt2 program) and to ONNX (torch's dynamo exporter), with the batch axis and
the set-size axis (the mask's N) dynamic.

What a graph can hold: the tensors an encoder reads from a batch, the backbone (inside
``backbone.tracing.exporting``: the masked attention path for every batch, windowed attention as
a dense banded mask), and the head's ``served_outputs``. What it cannot is refused with
``NotExportable``: an encoder that reads strings and cannot take ids instead, a head that
decodes step by step (Seq2SeqHead's greedy and beam search), a head that declares no served
outputs, a multi-task module. Featurization before the model (RDKit for SMILES, filterbanks for
wav, tokenizing text: ``served_batch``) stays in Python: the exported model takes the tensors
the encoder reads from a collated batch (a text encoder's token ids, ``Tokenizes``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.export import Dim, ExportedProgram

from vecset.backbone.tracing import NotExportable, exporting
from vecset.contracts.abilities import ImageSides, MaxSetSize, NotExported, Tokenizes
from vecset.encoders.collate import PADDED
from vecset.heads.contract import Head
from vecset.pipelines.training.step import forward_task

BATCH, SET_SIZE, HEIGHT, WIDTH = "batch", "set_size", "height", "width"
IMAGE = "image"  # (B, C, H, W): H and W dynamic where the encoder declares ImageSides
SET_INPUTS = ("mask", "tokens")  # (B, N) inputs whose N is the set size, the first one read


def served_batch(encoder: nn.Module, batch: dict) -> dict:
    """A collated batch as the exported model reads it: strings replaced by token ids where the
    encoder tokenizes (``Tokenizes``; the tokenizer stays in Python), else the batch itself."""
    return encoder.tokenized(batch) if isinstance(encoder, Tokenizes) else batch


def set_size(model: ServedModel, batch: dict) -> int | None:
    """N, the set size of the batch, from the first (B, N) input the model reads (``mask``, a
    text model's ``tokens``); None when it reads neither (an image's set size follows H, W)."""
    name = next((n for n in SET_INPUTS if n in model.inputs), None)
    return batch[name].shape[1] if name is not None else None


class _ReadKeys(dict):
    """A batch that records which keys are read (``[]`` and ``get``), in order."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.read: list[str] = []

    def _note(self, key: str) -> None:
        # "padded" (VectorSet.padded) is a hint from the collate, not an input: an exported
        # graph takes the masked path for every batch
        if key in self and key not in self.read and key != PADDED:
            self.read.append(key)

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)

    def __contains__(self, key) -> bool:  # "utterance_mean" in batch: a read too
        found = super().__contains__(key)
        if found and key not in self.read and key != PADDED:
            self.read.append(key)
        return found


class ServedModel(nn.Module):
    """encoder -> backbone -> ``head.served_outputs`` on the tensors ``inputs`` names, in that
    order; returns the served outputs as a tuple in ``outputs``' order.

    Build it with ``ServedModel.of(module, batch)``: the inputs are the batch keys the model
    reads, the outputs the names the head serves.

    Shapes: as the data module's collate gives them, e.g. x (B, N, F), mask (B, N) -> the head's
    served outputs, e.g. logits (B, N, C).
    """

    def __init__(self, encoder: nn.Module, backbone: nn.Module, head: Head, inputs: Sequence[str],
                 outputs: Sequence[str]) -> None:
        super().__init__()
        self.encoder, self.backbone, self.head = encoder, backbone, head
        self.inputs, self.outputs = list(inputs), list(outputs)

    def forward(self, *tensors: Tensor) -> tuple[Tensor, ...]:
        batch = dict(zip(self.inputs, tensors, strict=True))
        served = self.head.served_outputs(forward_task(self.encoder, self.backbone, self.head, batch))
        return tuple(served[name] for name in self.outputs)

    @classmethod
    def of(cls, module: nn.Module, batch: dict) -> ServedModel:
        """The served model of a TaskModule (``encoder``, ``backbone``, ``head``), its inputs
        found by running it once on ``batch`` (eval mode, no gradients)."""
        encoder, backbone, head = served_parts(module)
        recorded = _ReadKeys(batch)
        module.eval()
        with torch.no_grad():
            out = forward_task(encoder, backbone, head, recorded)
            served = head.served_outputs(out)
        bad = [k for k in recorded.read if not isinstance(batch[k], Tensor)]
        if bad:
            kinds = ", ".join(f"batch[{k!r}] ({type(batch[k]).__name__})" for k in bad)
            raise NotExportable(f"{type(encoder).__name__} reads {kinds}, not tensors: turning them into "
                                "tensors (tokenizing, featurizing) runs in Python, which an exported graph "
                                "cannot hold")
        return cls(encoder, backbone, head, recorded.read, list(served))


def served_parts(module: nn.Module) -> tuple[nn.Module, nn.Module, Head]:
    """A TaskModule's encoder, backbone and head; ``NotExportable`` for anything else."""
    from vecset.pipelines.training.multitask import MultiTaskModule
    from vecset.pipelines.training.task import TaskModule

    if isinstance(module, MultiTaskModule):
        raise NotExportable("a MultiTaskModule serves several tasks through one backbone; export one "
                            "task's model (a TaskModule config with its encoder and head)")
    if not isinstance(module, TaskModule) or not isinstance(module.head, Head):
        raise NotExportable(f"{type(module).__name__} is not a TaskModule (encoder, backbone, head): "
                            "nothing to export")
    return module.encoder, module.backbone, module.head


def check_exportable(module: nn.Module) -> tuple[nn.Module, nn.Module, Head]:
    """The module's encoder, backbone and head, once no part of it is refused before any data
    is read; ``NotExportable`` (one line naming the part) for a multi-task module, a part that
    declares ``export_refusal`` (``backbone.abilities.NotExported``: the BiLSTM, GridResNet and
    Seq2SeqHead) or a head that declares no served outputs."""
    encoder, backbone, head = served_parts(module)
    for part in (encoder, backbone, head):
        if isinstance(part, NotExported):
            raise NotExportable(part.export_refusal)
    if type(head).served_outputs is Head.served_outputs:  # Head's default: nothing served
        head.served_outputs(None)  # raises its NotExportable, naming the head
    return encoder, backbone, head


def example_inputs(model: ServedModel, batch: dict) -> tuple[Tensor, ...]:
    """The batch's tensors in the model's input order."""
    return tuple(batch[name] for name in model.inputs)


def input_axes(model: ServedModel, batch: dict) -> dict[str, dict[int, str]]:
    """The dynamic axes of every input, by name: dim 0 is the batch; where the model reads a
    ``mask`` or ``tokens`` (B, N), every other dim of size N is the set size, except the feature
    axis (the last of a float tensor with 3 or more dims); an ``image``'s height and width where
    the encoder takes many sizes (``ImageSides``; ``image_sides`` says which)."""
    n = set_size(model, batch)
    axes: dict[str, dict[int, str]] = {}
    for name in model.inputs:
        t = batch[name]
        dims = {0: BATCH} if t.dim() else {}
        if name == IMAGE and t.dim() == 4 and isinstance(model.encoder, ImageSides):
            dims |= {2: HEIGHT, 3: WIDTH}  # the set size follows them (H*W pixels, or patches)
        last = t.dim() - 1 if t.is_floating_point() and t.dim() >= 3 else None
        for d in range(1, t.dim()):
            if n is not None and t.shape[d] == n and d != last:
                dims[d] = SET_SIZE
        axes[name] = dims
    return axes


def image_sides(model: ServedModel) -> dict[str, Any] | None:
    """The image sizes the exported model takes (pixels), for export.json; None when the
    model reads no image or its encoder takes one size only. torch.export takes a side of one
    vector as a constant, so a side is at least two vectors (2 x P pixels), and multiples of P
    only: an encoder's ``pad`` (up to a multiple) is a size-dependent branch that it would fix.
    The .pt2 program refuses other sizes (``Guard failed``); onnxruntime does not check them."""
    if IMAGE not in model.inputs or not isinstance(model.encoder, ImageSides):
        return None
    sides = dict(model.encoder.image_sides())
    p = sides.pop("multiple_of")
    out = {"multiple_of": p, "min_height": 2 * p, "min_width": 2 * p, "max_height": sides["max_height"],
           "max_width": sides["max_width"],
           "checked": "model.pt2 refuses other sizes (Guard failed); onnxruntime does not check them "
                      "(a side that is not a multiple runs with its last partial patch dropped)"}
    if sides["pad"] and p > 1:  # torch.export specializes the padding's size: not in the graph
        out["pad"] = f"the encoder pads a side up to a multiple of {p}; the exported model does not: pad before"
    return out


def _side(name: str, sides: dict[str, Any], top: int | None) -> Any:
    p = sides["multiple_of"]
    if p == 1:
        return Dim(name, min=2, max=top)
    # the patch grid's rows (columns): the side is P of them, a multiple of P by construction
    return p * Dim(f"{name}_vectors", min=2, max=top // p if top else None)


def max_set_size(model: ServedModel) -> int | None:
    """The most vectors a set may hold (a learned positional table's length), None: any."""
    return model.encoder.max_set_size if isinstance(model.encoder, MaxSetSize) else None


def _dynamic_shapes(model: ServedModel, axes: dict[str, dict[int, str]]) -> tuple:
    dims = {BATCH: Dim(BATCH, min=1), SET_SIZE: Dim(SET_SIZE, min=1, max=max_set_size(model))}
    sides = image_sides(model)
    if sides is not None:
        dims |= {HEIGHT: _side(HEIGHT, sides, sides["max_height"]), WIDTH: _side(WIDTH, sides, sides["max_width"])}
    # one entry per input of the *tensors varargs
    return (tuple({d: dims[a] for d, a in ax.items()} for ax in axes.values()),)


def check_example(model: ServedModel, batch: dict) -> None:
    """torch.export takes sizes 0 and 1 (and two axes of the same size) as constants of the
    graph: an example batch needs >= 2 sets, >= 2 vectors and a batch size other than the set
    size."""
    B = batch[model.inputs[0]].shape[0]
    n = set_size(model, batch)
    if B < 2 or (n is not None and (n < 2 or n == B)):
        raise ValueError(f"the example batch has {B} sets of {n} vectors: export needs >= 2 sets, >= 2 vectors "
                         "and a batch size other than the set size (a batch of other sizes)")
    sides = image_sides(model)
    if sides is not None:
        H, W = batch[IMAGE].shape[2:]
        p = sides["multiple_of"]
        if H < sides["min_height"] or W < sides["min_width"] or H % p or W % p:
            raise ValueError(f"the example images are {H}x{W} pixels: export needs sides of >= 2 vectors, "
                             f"multiples of {p} pixels (>= {sides['min_height']}x{sides['min_width']})")


def export_program(model: ServedModel, batch: dict) -> ExportedProgram:
    """``torch.export`` of the served model (eval mode), batch and set size dynamic."""
    check_example(model, batch)
    model.eval()
    with exporting():
        return torch.export.export(model, example_inputs(model, batch),
                                   dynamic_shapes=_dynamic_shapes(model, input_axes(model, batch)))


def export_onnx(model: ServedModel, batch: dict, path: str | Path) -> Path:
    """ONNX through torch's dynamo exporter (needs ``onnx`` and ``onnxscript``: the ``[export]``
    extra), inputs and outputs named, batch and set size dynamic; written to ``path``."""
    check_example(model, batch)
    model.eval()
    try:
        import onnxscript  # noqa: F401  (torch.onnx's dynamo exporter needs it)
    except ImportError as e:
        raise ImportError("ONNX export needs onnx and onnxscript: pip install 'vecset[export]'") from e
    with exporting(), torch.no_grad(), warnings.catch_warnings():
        # one axis name per input: the exporter says for each that it keeps the first of the same name
        warnings.filterwarnings("ignore", message=r"# The axis name: .* will not be used")
        torch.onnx.export(model, example_inputs(model, batch), str(path), input_names=model.inputs,
                          output_names=model.outputs, dynamic_shapes=_dynamic_shapes(model, input_axes(model, batch)),
                          dynamo=True, verbose=False)
    return Path(path)


def run_onnx(path: str | Path, batch: dict, inputs: Sequence[str]) -> list[Any]:
    """The ONNX model's outputs on the batch's tensors, through onnxruntime (CPU)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {name: batch[name].cpu().numpy() for name in inputs})


def max_difference(reference: Sequence[Tensor], other: Sequence[Any]) -> float:
    """The largest absolute difference between two output tuples (tensors or arrays)."""
    worst = 0.0
    for a, b in zip(reference, other, strict=True):
        a, b = a.detach(), torch.as_tensor(b).detach()
        if a.shape != b.shape:
            raise AssertionError(f"output shape {tuple(b.shape)} != the PyTorch model's {tuple(a.shape)}")
        worst = max(worst, float((a.float() - b.float()).abs().max()) if a.numel() else 0.0)
    return worst
