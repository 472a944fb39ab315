"""``vecset export --config CONFIG --ckpt_path CKPT [--output_dir DIR]``: the config's model with
the checkpoint's weights, written as ``model.pt2`` (``torch.export``), ``model.onnx`` (when onnx
and onnxscript are installed: ``pip install 'vecset[export]'``) and ``export.json`` (inputs with
their dtypes and dynamic axes, outputs, the largest difference to the PyTorch model on test
batches; an image model's sides: multiples of the patch, the smallest and largest; a text
model's tokenizer: the vocabulary in id order, which ids it reads). Traced on one test batch;
checked on it, the next one and, for images, the first cropped by one patch (onnxruntime for
ONNX). Other options (``--data.init_args...``, ``--model...``) are the CLI's, as for ``vecset test``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from vecset.backbone.abilities import Tokenizes
from vecset.backbone.tracing import NotExportable
from vecset.pipelines.export.program import (
    IMAGE,
    ServedModel,
    example_inputs,
    export_onnx,
    export_program,
    image_sides,
    input_axes,
    max_difference,
    max_set_size,
    run_onnx,
    served_batch,
    served_parts,
    set_size,
)
from vecset.pipelines.training.checkpoint import check_checkpoint, read_checkpoint
from vecset.pipelines.training.hand_over import hand_over


def _example(batch: dict, served: ServedModel) -> dict:
    """The batch with a batch size other than its set size (torch.export would tie the two)."""
    n = set_size(served, batch)
    B = batch[served.inputs[0]].shape[0]
    if n is not None and B == n and B > 2:
        return {k: v[: B - 1] if torch.is_tensor(v) and v.dim() and v.shape[0] == B else v for k, v in batch.items()}
    return batch


def _smaller_images(batch: dict, sides: dict | None) -> list[dict]:
    """The batch cropped by one vector's side at the bottom and right, to check a second image
    size (none when the images are at the smallest size already)."""
    if sides is None:
        return []
    p, (H, W) = sides["multiple_of"], batch[IMAGE].shape[2:]
    if H - p < sides["min_height"] or W - p < sides["min_width"]:
        return []
    return [{**batch, IMAGE: batch[IMAGE][..., : H - p, : W - p]}]


def run_export(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="vecset export", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ckpt_path", required=True, help="the trained model's checkpoint (best-*.ckpt, last.ckpt)")
    parser.add_argument("--output_dir", default=None, help="where to write (default: exported/ beside the checkpoint)")
    parser.add_argument("--no_onnx", action="store_true", help="write the .pt2 program only")
    args, rest = parser.parse_known_args(argv)
    from vecset.pipelines.cli import run_cli

    cli = run_cli([*rest, "--trainer.logger=false", "--trainer.enable_progress_bar=false"], run=False)
    model, dm = cli.model, cli.datamodule
    encoder, _, head = served_parts(model)  # before reading anything: what cannot be exported is said first
    check_checkpoint(args.ckpt_path, model, weights=False)  # the config, before reading data
    dm.prepare_data()
    dm.setup("test")
    hand_over(dm, "test", encoder, head)
    try:  # a text model builds its embeddings from the checkpoint's vocabulary as it loads
        model.load_state_dict(read_checkpoint(args.ckpt_path)["state_dict"])
    except RuntimeError:
        check_checkpoint(args.ckpt_path, model)  # the parameters that differ, named
        raise
    model.eval()
    batches = (served_batch(encoder, b) for b in dm.test_dataloader())
    first = next(batches)
    served = ServedModel.of(model, first)
    example = _example(first, served)
    checks = [example, *[b for _, b in zip(range(1), batches, strict=False)],
              *_smaller_images(example, image_sides(served))]
    out = Path(args.output_dir) if args.output_dir else Path(args.ckpt_path).resolve().parent.parent / "exported"
    out.mkdir(parents=True, exist_ok=True)
    program = export_program(served, example)
    torch.export.save(program, out / "model.pt2")
    report = {"checkpoint": str(Path(args.ckpt_path).resolve()),
              "inputs": {n: {"dtype": str(example[n].dtype).removeprefix("torch."),
                             "shape": list(example[n].shape), "dynamic_axes": input_axes(served, example)[n]}
                         for n in served.inputs},
              "outputs": served.outputs, "pt2": str(out / "model.pt2"), "max_abs_diff": {}}
    if max_set_size(served) is not None:  # a learned positional table's length: longer sets are refused
        report["max_set_size"] = max_set_size(served)
    if image_sides(served) is not None:  # which heights and widths the model takes
        report["inputs"][IMAGE]["sides"] = image_sides(served)
    if isinstance(encoder, Tokenizes):  # the ids the model reads: how a server makes them
        report["tokenizer"] = encoder.tokenizer()
    with torch.no_grad():
        refs = [served(*example_inputs(served, b)) for b in checks]
        report["max_abs_diff"]["pt2"] = max(max_difference(r, program.module()(*example_inputs(served, b)))
                                            for r, b in zip(refs, checks, strict=True))
    if not args.no_onnx:
        export_onnx(served, example, out / "model.onnx")
        report["onnx"] = str(out / "model.onnx")
        try:
            report["max_abs_diff"]["onnx"] = max(max_difference(r, run_onnx(out / "model.onnx", b, served.inputs))
                                                 for r, b in zip(refs, checks, strict=True))
        except ImportError:
            report["max_abs_diff"]["onnx"] = None  # onnxruntime not installed: not checked
    (out / "export.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"exported {', '.join(served.inputs)} -> {', '.join(served.outputs)}: {out} "
          f"(max abs difference to PyTorch on {len(checks)} test batches: {report['max_abs_diff']})")
    return report


def main(argv: list[str]) -> None:
    try:
        run_export(argv)
    except NotExportable as e:
        raise SystemExit(f"vecset export: {e}") from None
