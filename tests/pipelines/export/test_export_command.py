"""``vecset export --config ... --ckpt_path ...`` on a debug run's checkpoint."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from vecset.pipelines import cli

ROOT = Path(__file__).resolve().parents[3]
DEBUG = str(ROOT / "configs" / "debug.yaml")
SMALL = ["--data.init_args.n_train=128", "--data.init_args.n_val=32", "--data.init_args.n_test=32",
         "--data.init_args.batch_size=16"]


def test_export_subcommand_writes_pt2_onnx_and_its_report(tmp_path, monkeypatch):
    pytest.importorskip("onnxscript")
    pytest.importorskip("onnxruntime")
    monkeypatch.chdir(tmp_path)
    cli.run_cli(["fit", "--config", DEBUG, "--trainer.enable_progress_bar=false", "--trainer.max_epochs=1",
                 "--plots=false", *SMALL])
    ckpt = next(Path("runs/debug").glob("version_0/checkpoints/best-*.ckpt"))
    monkeypatch.setattr(sys, "argv", ["vecset", "export", "--config", DEBUG, "--ckpt_path", str(ckpt), *SMALL])
    cli.main()
    out = Path("runs/debug/version_0/exported")
    report = json.loads((out / "export.json").read_text())
    assert (out / "model.pt2").is_file() and (out / "model.onnx").is_file()
    assert report["inputs"]["mask"]["dynamic_axes"] == {"0": "batch", "1": "set_size"}
    assert report["outputs"] == ["logits"]
    assert report["max_abs_diff"]["pt2"] <= 1e-5 and report["max_abs_diff"]["onnx"] <= 1e-5
    assert "sides" not in report["inputs"]["x"] and "tokenizer" not in report


def test_export_refuses_a_multitask_model(tmp_path, monkeypatch):
    from vecset.pipelines.export.command import run_export

    monkeypatch.chdir(tmp_path)
    with pytest.raises(Exception, match="MultiTaskModule serves several tasks"):
        run_export(["--config", str(ROOT / "configs" / "debug_multitask.yaml"), "--ckpt_path", "none.ckpt"])


def test_export_of_a_text_model_reads_ids_and_writes_its_tokenizer(tmp_path, monkeypatch):
    # UPOS tagging on the shipped CoNLL-U sample: strings -> ids in Python, ids -> logits exported
    pytest.importorskip("onnxscript")
    pytest.importorskip("onnxruntime")
    from vecset.pipelines.export.command import run_export

    monkeypatch.chdir(tmp_path)
    conllu = str(ROOT / "data" / "conllu" / "sample.conllu")
    args = ["--config", str(ROOT / "configs" / "pos_conllu.yaml"),
            *(f"--data.init_args.{s}_file={conllu}" for s in ("train", "val", "test"))]
    cli.run_cli(["fit", *args, "--trainer.enable_progress_bar=false", "--trainer.max_epochs=1", "--plots=false"])
    ckpt = Path("runs/pos_conllu/version_0/checkpoints/last.ckpt")
    report = run_export(["--ckpt_path", str(ckpt), *args])
    assert list(report["inputs"]) == ["tokens"] and report["inputs"]["tokens"]["dtype"] == "int64"
    assert report["inputs"]["tokens"]["dynamic_axes"] == {0: "batch", 1: "set_size"}
    tok = json.loads(Path("runs/pos_conllu/version_0/exported/export.json").read_text())["tokenizer"]
    assert tok["level"] == "word" and tok["lowercase"] and tok["pad"] == 0 and tok["vocab"][tok["unk"]] == "<unk>"
    assert "saw" in tok["vocab"]  # "I saw a saw": a training word
    assert report["max_abs_diff"]["pt2"] <= 1e-5 and report["max_abs_diff"]["onnx"] <= 1e-5
