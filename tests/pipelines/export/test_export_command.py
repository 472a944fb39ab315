"""``vecset export --config ... --ckpt_path ...`` on a debug run's checkpoint."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from vecset.command import main as vecset_main
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
    vecset_main()
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
    Path("none.ckpt").write_bytes(b"")  # refused before the checkpoint is read
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


# -- the command's refusals and what it takes, on checkpoints of untrained models ----------------
def untrained_checkpoint(args: list[str], path: Path, prepare=None) -> Path:
    """A checkpoint of the config's model as built (no training): its state_dict and the
    hyperparameters a fit would store; ``prepare(model)`` first, e.g. to fit statistics."""
    import torch

    model = cli.run_cli([*args, "--trainer.logger=false", "--trainer.enable_progress_bar=false"], run=False).model
    if prepare is not None:
        prepare(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams)}, path)
    return path


def export_error(monkeypatch, *args: str) -> str:
    """What ``vecset export ARGS`` says after ``error: `` (it must exit 2)."""
    import io

    monkeypatch.setattr(sys, "argv", ["vecset", "export", *args])
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit) as e:
        vecset_main()
    assert e.value.code == 2, err.getvalue()
    assert err.getvalue().startswith("error: "), err.getvalue()
    return err.getvalue().removeprefix("error: ").strip()


def test_bad_options_are_named_in_one_line_before_the_model_loads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert export_error(monkeypatch, "--ckpt_path", "x.ckpt").startswith(
        "vecset export: --config is required: the config the checkpoint was trained with")
    assert export_error(monkeypatch, "--config", DEBUG, "--ckpt_path", "nope.ckpt") == (
        "vecset export: --ckpt_path nope.ckpt: no such file (a checkpoint: runs/<job>/version_N/checkpoints/"
        "best-*.ckpt or last.ckpt)")
    (tmp_path / "ckpts").mkdir()
    (tmp_path / "ckpts" / "last.ckpt").write_bytes(b"not read")
    msg = export_error(monkeypatch, "--config", DEBUG, "--ckpt_path", "ckpts")
    assert msg.startswith("vecset export: --ckpt_path ckpts is a directory: give one checkpoint file in it "
                          "(it holds last.ckpt)") and "\n" not in msg
    # the output directory is checked before the checkpoint is read (this one is no checkpoint)
    (tmp_path / "blocker").write_text("a file")
    msg = export_error(monkeypatch, "--config", DEBUG, "--ckpt_path", "ckpts/last.ckpt", "--output_dir", "blocker/out")
    assert msg == f"vecset export: --output_dir blocker/out: {tmp_path / 'blocker'} is a file, not a directory"
    msg = export_error(monkeypatch, "--config", DEBUG, "--ckpt_path", "ckpts/last.ckpt", "--output_dir", "/proc/out")
    assert msg.startswith("vecset export: --output_dir /proc/out: cannot write in /proc") and "\n" not in msg


def test_a_runs_saved_config_exports_and_the_served_model_checks_its_inputs(tmp_path, monkeypatch):
    import torch
    import yaml

    from vecset.pipelines.export.command import run_export
    from vecset.pipelines.export.serve import ExportedModel, ExportInputError

    monkeypatch.chdir(tmp_path)
    ckpt = untrained_checkpoint(["--config", DEBUG, *SMALL], tmp_path / "runs/debug/version_0/checkpoints/last.ckpt")
    # a run's config.yaml is fit's: it holds fit's own arguments too
    saved = {**yaml.safe_load(Path(DEBUG).read_text()), "ckpt_path": None, "weights_only": None}
    (tmp_path / "runs/debug/version_0/config.yaml").write_text(yaml.safe_dump(saved))
    out = tmp_path / "runs/debug/version_0/exported"
    out.mkdir()
    for stale in ("model.onnx", "model.onnx.data"):  # an earlier export's, of another checkpoint
        (out / stale).write_text("old")
    report = run_export(["--config", "runs/debug/version_0/config.yaml", "--ckpt_path", str(ckpt), "--no_onnx", *SMALL])
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "export.json", "model.pt2"] and "onnx" not in report
    assert "- `x`: float32 (batch, set_size, 2)" in (out / "README.md").read_text()
    model = ExportedModel(out)
    x, mask = torch.randn(3, 7, 2), torch.ones(3, 7, dtype=torch.bool)
    assert model(x=x, mask=mask)["logits"].shape == (3, 7, 2)
    with pytest.raises(ExportInputError, match=r"^input 'x': expected dtype float32, got float64$"):
        model(x=x.double(), mask=mask)
    with pytest.raises(ExportInputError, match=r"^input 'mask': dim 1 \(set_size\) is 5, but 'x' dim 1 \(set_size\) is 7"):
        model(x=x, mask=mask[:, :5])
    with pytest.raises(ExportInputError, match=r"^input 'x': dim 2 must be 2 \(fixed in the exported model: "
                                               r"\(batch, set_size, 2\)\), got shape \[3, 7, 3\]$"):
        model(x=torch.randn(3, 7, 3), mask=mask)
    with pytest.raises(ExportInputError, match=r"^inputs: expected x, mask \(export.json\), got x$"):
        model(x=x)


def test_speech_frames_debug_config_exports(tmp_path, monkeypatch):
    # global normalization: its fitted flag is a buffer, which the export may not branch on
    import torch

    from vecset.pipelines.export.command import run_export

    monkeypatch.chdir(ROOT)  # the config's data/speech
    args = ["--config", str(ROOT / "configs" / "speech_frames_debug.yaml")]
    fit_stats = lambda m: m.encoder.set_global_stats([torch.randn(20, 40)])  # noqa: E731
    ckpt = untrained_checkpoint(args, tmp_path / "checkpoints" / "last.ckpt", prepare=fit_stats)
    report = run_export([*args, "--ckpt_path", str(ckpt), "--output_dir", str(tmp_path / "out"), "--no_onnx"])
    assert report["inputs"]["x"]["dynamic_axes"] == {0: "batch", 1: "set_size"} and report["max_abs_diff"]["pt2"] <= 1e-4


def test_karate_is_refused_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["--config", str(ROOT / "configs" / "karate.yaml")]
    ckpt = untrained_checkpoint(args, tmp_path / "checkpoints" / "last.ckpt")
    msg = export_error(monkeypatch, *args, "--ckpt_path", str(ckpt), "--no_onnx")
    assert msg.startswith("vecset export: GraphNodeDataModule's batches hold 1 set (its batch_size): the export traces an "
                          "example of >= 2 sets") and "karate" in msg and "\n" not in msg


def test_a_batch_of_one_set_is_refused_before_the_data_is_read(tmp_path, monkeypatch):
    import torch

    """Issue 57: a speech run of batch_size 1 was refused after its whole test split was read
    (40 s), exit 1; the data's batch_size says it before any data is read: exit 2."""
    monkeypatch.chdir(ROOT)  # the config's data/speech
    args = ["--config", str(ROOT / "configs" / "speech_frames_debug.yaml"), "--data.init_args.batch_size=1"]
    fit_stats = lambda m: m.encoder.set_global_stats([torch.randn(20, 40)])  # noqa: E731
    ckpt = untrained_checkpoint(args, tmp_path / "checkpoints" / "last.ckpt", prepare=fit_stats)
    from vecset.pipelines.speech.data import SpeechFramesDataModule

    monkeypatch.setattr(SpeechFramesDataModule, "setup", lambda self, stage=None: pytest.fail("the data was read"))
    msg = export_error(monkeypatch, *args, "--ckpt_path", str(ckpt), "--no_onnx", "--output_dir", str(tmp_path / "o"))
    assert msg.startswith("vecset export: SpeechFramesDataModule's batches hold 1 set (its batch_size): the export "
                          "traces an example of >= 2 sets") and "\n" not in msg, msg


# every shipped config: exported (tests per modality in this folder) or refused before any data is
# read, in one line that names the part; karate's data (one graph, batches of one) is refused before it is read
REFUSED = {"debug_multitask": "MultiTaskModule", "multitask": "MultiTaskModule", "multitask_molecules": "MultiTaskModule",
           "fashion_mnist_cnn": "GridResNet", "g2p": "Seq2SeqHead", "g2p_bahdanau": "Seq2SeqHead",
           "g2p_debug": "Seq2SeqHead", "kernel_regression": "NadarayaWatsonHead", "pretrain_molecules": "PretextHead",
           "pretrain_molecules_stream": "PretextHead",
           "speech_frames_bilstm": "BiLSTM"}


@pytest.mark.parametrize("config", sorted(p.stem for p in (ROOT / "configs").glob("*.yaml")))
def test_every_shipped_config_exports_or_is_refused_by_name(config, tmp_path):
    from vecset.backbone.tracing import NotExportable
    from vecset.pipelines.export.program import check_exportable

    # image_folder.yaml's head counts the class folders of its root (a placeholder): give it one
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    root = ["--data.init_args.root", str(tmp_path)] if config == "image_folder" else []
    model = cli.run_cli(["--config", str(ROOT / "configs" / f"{config}.yaml"), "--trainer.logger=false", *root],
                        run=False).model
    if config not in REFUSED:
        check_exportable(model)
        return
    with pytest.raises(NotExportable) as e:
        check_exportable(model)
    assert REFUSED[config] in str(e.value) and "\n" not in str(e.value)


def test_help_lists_export_ensemble_and_the_shipped_predictors(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["vecset", "--help"])
    with pytest.raises(SystemExit) as e:
        vecset_main()
    out = capsys.readouterr().out
    assert e.value.code == 0 and "{fit,validate,test,predict,export,ensemble,pack,configs}" in out
    assert "\n    export            Write a trained model" in out
    assert "\n    ensemble          Train k members" in out
    assert "\n    pack              Write a run's best model as a model folder" in out
    assert "\n    predict --model   Predict with a shipped model" in out
