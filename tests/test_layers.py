"""Dependencies point one way: pipelines -> heads, encoders -> backbone -> contracts -> torch. Heads never
import encoders nor the reverse, only pipelines/ imports Lightning, and data modules never
reach into the model (what it needs flows through ``data_spec``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# package -> the vecset packages it must not import
FORBIDDEN = {
    "contracts": ("backbone", "encoders", "heads", "pipelines"),
    "backbone": ("encoders", "heads", "pipelines"),
    "encoders": ("heads", "pipelines"),
    "heads": ("encoders", "pipelines"),
}


def imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out.append((node.lineno, node.module or ""))
    return out


def test_dependencies_point_one_way():
    bad = []
    for package, forbidden in FORBIDDEN.items():
        for path in (ROOT / package).rglob("*.py"):
            for line, name in imports(path):
                parts = name.split(".")
                if parts[0] == "vecset" and len(parts) > 1 and parts[1] in forbidden:
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {name}")
                if parts[0] in ("pytorch_lightning", "lightning", "lightning_fabric"):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {name} (only pipelines/ imports Lightning)")
    assert not bad, "\n".join(bad)


def test_no_chemistry_in_pipelines_data():
    """All chemistry (RDKit: parsing, featurizing, descriptors, scaffolds) lives in encoders/graph;
    data modules find files, split, call the reader and batch. Imports inside functions count."""
    bad = [f"{p.relative_to(ROOT)}:{line}: {name}" for p in (ROOT / "pipelines" / "data").rglob("*.py")
           for line, name in imports(p) if name.split(".")[0] == "rdkit"]
    assert not bad, "\n".join(bad)


def test_no_private_name_is_imported_from_another_package():
    """``pipelines/images/data.py`` imported ``encoders/image``'s ``_image_channels``: what one
    package needs from another is public (a module of its own folder may share a private name)."""
    bad = []
    for top in ("contracts", "backbone", "encoders", "heads", "pipelines"):
        for path in (ROOT / top).rglob("*.py"):
            here = ".".join(("vecset", *path.parent.relative_to(ROOT).parts))
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("vecset."):
                    folder = node.module.rsplit(".", 1)[0] if (ROOT / Path(*node.module.split(".")[1:])).with_suffix(".py").exists() \
                        else node.module
                    bad += [f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}.{a.name}" for a in node.names
                            if a.name.startswith("_") and folder != here]
    assert not bad, "\n".join(bad)


def test_data_modules_never_touch_the_model():
    bad = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "pipelines" / "data").rglob("*.py")
           for i, line in enumerate(p.read_text().splitlines(), 1) if "lightning_module" in line]
    assert not bad, bad


def test_data_modules_never_decode_nor_write_predictions():
    """pipelines/data finds, splits, reads and batches: writing predictions and running a head's
    decoder is pipelines/predict's (which imports the data, never the reverse)."""
    bad = []
    for p in (ROOT / "pipelines" / "data").rglob("*.py"):
        for line, name in imports(p):
            if name.startswith(("vecset.pipelines.predict", "vecset.heads", "pytorch_lightning.callbacks")):
                bad.append(f"{p.relative_to(ROOT)}:{line}: {name}")
        for i, text in enumerate(p.read_text().splitlines(), 1):
            if any(w in text for w in ("segment_decoder", "SegmentDecoder", "write_prediction", "prediction_rows",
                                       "predict_context")):
                bad.append(f"{p.relative_to(ROOT)}:{i}: {text.strip()}")
    assert not bad, "\n".join(bad)
