"""bench/digits_baselines.py: its vecset variants build the models they are named for, and a
row carries the run's validation and test accuracy."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import digits_baselines as db  # noqa: E402


def test_each_variant_builds_its_encoder_and_stochastic_depth(tmp_path, monkeypatch):
    from vecset.encoders import ConvTokenizer, PatchEncoder
    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    built = {}
    for name, (config, args) in db.CONFIGS.items():
        if "digits.yaml" not in config:
            continue
        cli = run_cli(["--config", str(ROOT / config), "--trainer.enable_progress_bar=false", *args], run=False)
        built[name] = (type(cli.model.encoder), cli.model.backbone.drop_path)
    assert built == {"vecset CCT (configs/digits.yaml)": (ConvTokenizer, 0.1),
                     "vecset patch (digits.yaml, 2x2 patches)": (PatchEncoder, 0.0)}


def test_a_vecset_row_reads_validation_and_test_from_the_run(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(
        {"best_val": 0.99306, "test": {"test_acc": 0.99167}, "wall_seconds": 457.1, "epochs": 160}))
    row = db.vecset_row("vecset CCT (configs/digits.yaml)", tmp_path, 400.0, [])
    assert (row["val_acc"], row["test_acc"], row["cpu_seconds"], row["epochs"]) == (0.99306, 0.99167, 400.0, 160)
