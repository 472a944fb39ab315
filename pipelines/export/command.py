"""``vecset export --config CONFIG --ckpt_path CKPT [--output_dir DIR]``: the config's model with
the checkpoint's weights, written as ``model.pt2`` (``torch.export``), ``model.onnx`` (when onnx
and onnxscript are installed: ``pip install 'vecset[export]'``), ``export.json`` (inputs with
their dtypes and dynamic axes, outputs, the largest difference to the PyTorch model on test
batches; an image model's sides: multiples of the patch, the smallest and largest; a text
model's tokenizer: the vocabulary in id order, which ids it reads) and ``README.md`` (the same
for a reader, and how to serve it with ``serve.ExportedModel``, which checks inputs against
export.json). Traced on one test batch; checked on it, the next one and, for images, the first
cropped by one patch (onnxruntime for ONNX). CONFIG may be a run's saved ``config.yaml``. The
options, the checkpoint's file and the output directory are checked before the model loads;
``--no_onnx`` removes an earlier export's model.onnx. Other options (``--data.init_args...``,
``--model...``) are the CLI's, as for ``vecset test``."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

from vecset.backbone.tracing import NotExportable
from vecset.contracts.abilities import Tokenizes
from vecset.pipelines.export.program import (
    IMAGE,
    ServedModel,
    check_exportable,
    example_inputs,
    export_onnx,
    export_program,
    image_sides,
    input_axes,
    max_difference,
    max_set_size,
    run_onnx,
    served_batch,
    set_size,
)
from vecset.pipelines.training.checkpoint_files import (
    NotACheckpointError,
    UnsafeCheckpointError,
    is_checkpoint_file,
    read_checkpoint,
)
from vecset.pipelines.training.checkpoint_fit import CheckpointMismatchError, check_checkpoint
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


class ExportUsageError(ValueError):
    """A command line ``vecset export`` cannot run (the message names the option and what was expected)."""


# the arguments of a subcommand's own method (Trainer.fit's ckpt_path, weights_only) that a run's
# saved config.yaml holds: not model settings, and the model-building parser has no such options
RUN_ONLY_KEYS = ("ckpt_path", "weights_only")


def _checkpoint(path: str) -> str:
    """The ``--ckpt_path`` when it names a file (a local path or an fsspec URL), else why not."""
    if Path(path).is_dir():
        found = sorted(p.name for p in Path(path).glob("**/*.ckpt"))[:4]
        hint = f" (it holds {', '.join(found)})" if found else ""
        raise ExportUsageError(f"--ckpt_path {path} is a directory: give one checkpoint file in it{hint}, "
                               "e.g. runs/<job>/version_N/checkpoints/last.ckpt")
    if not is_checkpoint_file(path):
        raise ExportUsageError(f"--ckpt_path {path}: no such file (a checkpoint: runs/<job>/version_N/checkpoints/"
                               "best-*.ckpt or last.ckpt)")
    return path


def _output_dir(out: Path, given: bool) -> Path:
    """``out``, once it is known that it can be made and written to (checked before the model
    loads): its nearest existing folder must be a folder and take a file."""
    what = f"--output_dir {out}" if given else f"the output directory {out} (default: exported/ beside checkpoints/)"
    existing = out.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ExportUsageError(f"{what}: {existing} is a file, not a directory")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as e:
        raise ExportUsageError(f"{what}: cannot write in {existing} ({e.strerror or e})") from None
    return out


def _config(path: str, tmp: Path) -> str:
    """A ``--config`` as the CLI takes it: a run's saved config.yaml (fit's config, with its
    ``ckpt_path`` and ``weights_only``) without those keys, a copy in ``tmp``; any other as it is."""
    if not Path(path).is_file():
        return path  # the CLI says what is wrong with it
    import yaml

    config = yaml.safe_load(Path(path).read_text())
    if not isinstance(config, dict) or not any(k in config for k in RUN_ONLY_KEYS):
        return path
    copy = tmp / f"{len(list(tmp.iterdir()))}" / Path(path).name
    copy.parent.mkdir()
    copy.write_text(yaml.safe_dump({k: v for k, v in config.items() if k not in RUN_ONLY_KEYS}, sort_keys=False))
    return str(copy)


def _refuse_one_set(batch: dict | None, served: ServedModel | None, dm) -> None:
    """torch.export takes a batch axis of 1 as a constant: the example needs >= 2 sets. Asked
    first of the data's declared ``batch_size`` (no batch: before its data is read), then of its
    first test batch (a test split of one set)."""
    B = dm.batch_size if batch is None or served is None else batch[served.inputs[0]].shape[0]
    if B < 2:
        where = f"first test batch holds {B} set" if batch is not None else f"batches hold {B} set (its batch_size)"
        raise NotExportable(f"{type(dm).__name__}'s {where}: the export traces an example "
                            "of >= 2 sets (a batch of one would be fixed in the graph); data that is a single set "
                            "(one graph's nodes, as karate) cannot be exported: serve the PyTorch model (vecset "
                            "predict); otherwise give a test batch_size of >= 2")


def describe(served: ServedModel, example: dict) -> dict:
    """What export.json says the exported model takes and returns (``serve.ExportedModel``
    checks inputs against it): each input's dtype, traced shape and dynamic axes, an image's
    sides, the largest set size, a text model's tokenizer, the outputs' names."""
    report = {"inputs": {n: {"dtype": str(example[n].dtype).removeprefix("torch."), "shape": list(example[n].shape),
                             "dynamic_axes": input_axes(served, example)[n]} for n in served.inputs},
              "outputs": served.outputs}
    if max_set_size(served) is not None:  # a learned positional table's length: longer sets are refused
        report["max_set_size"] = max_set_size(served)
    if image_sides(served) is not None:  # which heights and widths the model takes
        report["inputs"][IMAGE]["sides"] = image_sides(served)
    if isinstance(served.encoder, Tokenizes):  # the ids the model reads: how a server makes them
        report["tokenizer"] = served.encoder.tokenizer()
    return report


def readme(report: dict) -> str:
    """The export directory's README.md: what the model takes and returns, and how to call it."""
    lines = ["# Exported vecset model", "", f"From {report['checkpoint']}.", "", "## Inputs", ""]
    for name, info in report["inputs"].items():
        axes = {int(d): a for d, a in info["dynamic_axes"].items()}
        shape = ", ".join(axes.get(d, str(s)) for d, s in enumerate(info["shape"]))
        lines.append(f"- `{name}`: {info['dtype']} ({shape}); sizes given as numbers are fixed, axes of one name "
                     "are equal across inputs")
        if "sides" in info:
            s = info["sides"]
            lines.append(f"  - height and width: multiples of {s['multiple_of']} pixels, from {s['min_height']}x"
                         f"{s['min_width']} up to {s['max_height'] or 'any'}x{s['max_width'] or 'any'}")
    if "max_set_size" in report:
        lines.append(f"- at most {report['max_set_size']} vectors per set (set_size)")
    lines += ["", "## Outputs", "", *(f"- `{n}`" for n in report["outputs"]), "", "## Use", "", "```python",
              "from vecset.pipelines.export.serve import ExportedModel", "",
              f"model = ExportedModel(\"{Path(report['pt2']).parent}\")  # backend=\"onnx\": onnxruntime",
              f"out = model({', '.join(f'{n}=...' for n in report['inputs'])})  # inputs checked against export.json",
              "```", "", "The graphs alone check little: onnxruntime runs an image of another size or fails on an "
              "internal node; ExportedModel names the input and what was expected.", ""]
    return "\n".join(lines)


def run_export(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="vecset export", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", "-c", action="append", default=[],
                        help="the config the checkpoint was trained with (its run directory's config.yaml)")
    parser.add_argument("--ckpt_path", required=True, help="the trained model's checkpoint (best-*.ckpt, last.ckpt)")
    parser.add_argument("--output_dir", default=None, help="where to write (default: exported/ beside the checkpoint)")
    parser.add_argument("--no_onnx", action="store_true", help="write the .pt2 program only")
    args, rest = parser.parse_known_args(argv)
    if not args.config:
        raise ExportUsageError("--config is required: the config the checkpoint was trained with (runs/<job>/"
                               "version_N/config.yaml, or the configs/<job>.yaml it ran)")
    ckpt = _checkpoint(args.ckpt_path)
    out = _output_dir(Path(args.output_dir) if args.output_dir else Path(ckpt).resolve().parent.parent / "exported",
                      given=args.output_dir is not None)
    from vecset.pipelines.cli import run_cli

    with tempfile.TemporaryDirectory() as tmp:
        configs = [a for c in args.config for a in ("--config", _config(c, Path(tmp)))]
        cli = run_cli([*configs, *rest, "--trainer.logger=false", "--trainer.enable_progress_bar=false"], run=False)
    model, dm = cli.model, cli.datamodule
    encoder, _, head = check_exportable(model)  # before reading anything: what cannot be exported is said first
    _refuse_one_set(None, None, dm)  # a batch of one set, from the config alone
    check_checkpoint(ckpt, model, weights=False)  # the config, before reading data
    dm.prepare_data()
    dm.setup("test")
    hand_over(dm, "test", encoder, head)
    try:  # a text model builds its embeddings from the checkpoint's vocabulary as it loads
        model.load_state_dict(read_checkpoint(ckpt)["state_dict"])
    except RuntimeError:
        check_checkpoint(ckpt, model)  # the parameters that differ, named
        raise
    model.eval()
    batches = (served_batch(encoder, b) for b in dm.test_dataloader())
    first = next(batches)
    served = ServedModel.of(model, first)
    _refuse_one_set(first, served, dm)
    example = _example(first, served)
    checks = [example, *[b for _, b in zip(range(1), batches, strict=False)],
              *_smaller_images(example, image_sides(served))]
    out.mkdir(parents=True, exist_ok=True)
    program = export_program(served, example)
    torch.export.save(program, out / "model.pt2")
    report = {"checkpoint": str(Path(ckpt).resolve()), **describe(served, example),
              "pt2": str(out / "model.pt2"), "max_abs_diff": {}}
    with torch.no_grad():
        refs = [served(*example_inputs(served, b)) for b in checks]
        report["max_abs_diff"]["pt2"] = max(max_difference(r, program.module()(*example_inputs(served, b)))
                                            for r, b in zip(refs, checks, strict=True))
    # an earlier export's ONNX model (another checkpoint's, maybe) does not stay beside this .pt2
    stale = [p for p in (out / "model.onnx", out / "model.onnx.data") if args.no_onnx and p.exists()]
    for p in stale:
        p.unlink()
    if stale:
        print(f"removed an earlier export's {', '.join(p.name for p in stale)} from {out} (--no_onnx)")
    if not args.no_onnx:
        export_onnx(served, example, out / "model.onnx")
        report["onnx"] = str(out / "model.onnx")
        try:
            report["max_abs_diff"]["onnx"] = max(max_difference(r, run_onnx(out / "model.onnx", b, served.inputs))
                                                 for r, b in zip(refs, checks, strict=True))
        except ImportError:
            report["max_abs_diff"]["onnx"] = None  # onnxruntime not installed: not checked
    (out / "export.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "README.md").write_text(readme(report))
    print(f"exported {', '.join(served.inputs)} -> {', '.join(served.outputs)}: {out} "
          f"(max abs difference to PyTorch on {len(checks)} test batches: {report['max_abs_diff']})")
    return report


def main(argv: list[str]) -> None:
    try:
        run_export(argv)
    except (NotExportable, ExportUsageError, NotACheckpointError, UnsafeCheckpointError, CheckpointMismatchError) as e:
        # a setting or file the user gave: the command's one error line, exit 2 (as a config's)
        sys.stderr.write(f"error: vecset export: {e}\n")
        raise SystemExit(2) from None
