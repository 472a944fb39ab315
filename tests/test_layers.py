"""Dependencies point one way: pipelines -> heads, encoders -> backbone -> torch. Heads never
import encoders nor the reverse, only pipelines/ imports Lightning, and data modules never
reach into the model (what it needs flows through ``data_spec``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# package -> the vecset packages it must not import
FORBIDDEN = {
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
