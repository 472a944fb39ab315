"""What pipelines/ may not do any more (issue #28): probe a model part for an ability by name
(``getattr``/``hasattr``; the parts declare them: contracts/abilities.py), let a report reach into
a data module's splits or anything private, or let a data module name its reports."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIPELINES = ROOT / "pipelines"

# the model's parts and the abilities they declare: never probed by name (a LightningModule's
# own ``hparams``, read by the checkpoint checks, is Lightning's, not an ability)
MODEL_PARTS = {"encoder", "backbone", "head", "encoders", "heads", "blocks", "attn"}
ABILITIES = {"receptive_field", "window", "grid", "patch_size", "d_model", "cls", "blocks", "attn",
             "attention_weights", "capture_attention", "pooling", "last_pool_weights", "segment_decoder",
             "decoder", "mean_std", "task", "encoder", "backbone", "head", "heads", "encoders"}


def probes(path: Path) -> list[tuple[int, str, str]]:
    """(line, the probed object's source, the attribute name or '?') of every getattr/hasattr."""
    text = path.read_text()
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            obj = ast.get_source_segment(text, node.args[0]) or ""
            name = node.args[1].value if isinstance(node.args[1], ast.Constant) else "?"
            out.append((node.lineno, obj, name))
    return out


def test_no_getattr_or_hasattr_probe_for_a_model_ability():
    bad = []
    for path in PIPELINES.rglob("*.py"):
        for line, obj, name in probes(path):
            on_model = any(part in MODEL_PARTS for part in obj.replace("(", ".").replace("[", ".").split("."))
            if name in ABILITIES or on_model:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {obj!r}, {name!r}")
    assert not bad, "model abilities are declared (contracts/abilities.py), not probed:\n" + "\n".join(bad)


def test_the_probes_that_remain_are_of_other_things():
    """What is still looked up by name: the trainer's and torch's internals, checkpoint import
    helpers; never a model part, nor a data module's declared members (``describe``,
    ``image_shape``, ``batch_size``: the data module contract) or a class's ``decode_settings``."""
    remaining = {(p.relative_to(PIPELINES).as_posix(), name) for p in PIPELINES.rglob("*.py") for _, _, name in probes(p)}
    allowed_names = {"_trainer", "datamodule", "sampler", "_data_fetcher", "_is_amx_tile_supported",
                     "_is_avx512_bf16_supported", "hparams", "as_dict", "trainer", "?",
                     "_subcommand_parsers", "_links_group",  # jsonargparse's parser internals (cli, config links)
                     "dest", "get",  # jsonargparse's frames, read for a config error's setting (config_errors)
                     "dtype", "shape"}  # an exported model's inputs: numpy arrays or tensors (export/serve)
    assert {name for _, name in remaining} <= allowed_names, sorted(remaining)


def report_files() -> list[Path]:
    """pipelines/reports/ and a job folder's reports (the files that define a ``Report``)."""
    return [p for p in PIPELINES.rglob("*.py") if p.parent.name == "reports"
            or re.search(r"^class \w+\(Report\)", p.read_text(), re.M)]


def test_reports_read_no_split_internals_and_nothing_private():
    bad = []
    assert (PIPELINES / "speech" / "reports.py") in report_files()
    for path in report_files():
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Attribute):
                private = node.attr.startswith("_") and not node.attr.startswith("__")
                own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
                if (private and not own) or node.attr in ("sets", "splits"):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.get_source_segment(text, node)}")
    assert not bad, "reports read ctx.test_items() / ctx.test_outputs() and public names:\n" + "\n".join(bad)


def test_data_modules_name_no_reports():
    bad = []
    for path in (PIPELINES / "data").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "reports":
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: def reports")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vecset.pipelines.reports"):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: imports {node.module}")
    assert not bad, "\n".join(bad)


def test_the_probe_check_catches_a_probe(tmp_path):
    """The check itself: a getattr on a model part is found."""
    f = tmp_path / "x.py"
    f.write_text("def f(model, dm):\n    return getattr(model.backbone, 'cls', None), getattr(dm, 'image_shape')\n")
    assert probes(f) == [(2, "model.backbone", "cls"), (2, "dm", "image_shape")]
