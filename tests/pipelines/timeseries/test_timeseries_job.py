"""The time-series job end to end (configs/timeseries_debug.yaml): a fit through the CLI, its
reports, predict's rows, the links from the data (channel and class counts) and the data
module's errors on a folder of one's own."""

from __future__ import annotations

import contextlib
import csv
import json
from pathlib import Path

import pytest

from vecset.pipelines.cli import run_cli
from vecset.pipelines.timeseries.data import TimeSeriesDataModule
from vecset.shipped import shipped_root

ROOT = Path(__file__).resolve().parents[3]
DEBUG = str(ROOT / "configs" / "timeseries_debug.yaml")
QUIET = ["--trainer.enable_progress_bar=false"]


def own_folder(tmp_path: Path, n: int = 40, split: bool = False) -> Path:
    """n series of 3 channels (4-9 steps), two classes; labels.csv with or without a split column."""
    root = tmp_path / "series"
    root.mkdir()
    rows = ["file,label" + (",split" if split else "")]
    for i in range(n):
        steps = 4 + i % 6
        (root / f"s{i:02d}.csv").write_text("a,b,c\n" + "".join(f"{t},{i % 2},{-t * 0.5}\n" for t in range(steps)))
        rows.append(f"s{i:02d}.csv,{'up' if i % 2 else 'down'}" + (f",{'test' if i >= n - 4 else 'train'}" if split else ""))
    (root / "labels.csv").write_text("\n".join(rows) + "\n")
    return root


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> Path:
    run_root = tmp_path_factory.mktemp("timeseries")
    with contextlib.chdir(run_root):
        run_cli(["fit", "--config", DEBUG, *QUIET])
    return run_root / "runs" / "timeseries_debug" / "version_0"


def test_the_debug_config_fits_and_writes_its_reports(fitted):
    results = json.loads((fitted / "results.json").read_text())
    assert 0.0 <= results["test"]["test_acc"] <= 1.0
    per_class = json.loads((fitted / "test_per_class.json").read_text())
    assert (fitted / "confusion_matrix.png").exists() and (fitted / "attention.png").exists()
    assert set(json.dumps(per_class).split('"')) >= {str(k) for k in range(1, 10)}  # the 9 speakers named
    config = (fitted / "config.yaml").read_text()
    assert "in_dim: 12" in config and "num_outputs: 9" in config  # from the data, not the config


def test_predict_writes_a_row_per_test_series(fitted, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run_cli(["predict", "--config", DEBUG, "--ckpt_path", str(fitted / "checkpoints" / "last.ckpt"), *QUIET])
    rows = list(csv.DictReader(open(tmp_path / "runs" / "timeseries_debug" / "version_0" / "predictions.csv")))
    assert len(rows) == 370 and list(rows[0]) == ["file", "label", "prediction", "probability"]
    assert rows[0]["file"] == "test_001.csv" and rows[0]["label"] == "1"
    assert all(r["prediction"] in {str(k) for k in range(1, 10)} and 0 < float(r["probability"]) <= 1 for r in rows)


def test_predict_files_of_ones_own(fitted, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in ("u1.csv", "u2.csv"):
        (mine / name).write_text((ROOT / "data" / "japanese_vowels" / "test_005.csv").read_text())
    run_cli(["predict", "--config", DEBUG, "--ckpt_path", str(fitted / "checkpoints" / "last.ckpt"), *QUIET,
             "--data.init_args.predict_files", f"[{mine}]"])
    rows = list(csv.DictReader(open(tmp_path / "runs" / "timeseries_debug" / "version_0" / "predictions.csv")))
    assert [(r["file"], r["label"]) for r in rows] == [(str(mine / "u1.csv"), ""), (str(mine / "u2.csv"), "")]
    assert rows[0]["prediction"] == rows[1]["prediction"]  # the same series


@pytest.mark.parametrize("key,given,source", [
    ("model.init_args.encoder.init_args.in_dim", 5, "channel count given twice: model.init_args.encoder.init_args.in_dim=5 "
     "but data.init_args.root="),
    ("model.init_args.head.init_args.num_outputs", 4, "class count given twice: model.init_args.head.init_args.num_outputs=4 "
     "but data.init_args.root="),
])
def test_a_config_giving_another_count_than_the_data_gets_one_error_naming_both(tmp_path, monkeypatch, capsys, key,
                                                                                given, source):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        run_cli(["fit", "--config", DEBUG, f"--{key}={given}", *QUIET])
    err = capsys.readouterr().err
    assert e.value.code == 2 and not (tmp_path / "runs").exists()
    assert err.splitlines()[0].startswith(f"error: {source}")
    assert "japanese_vowels" in err.splitlines()[0]


def test_the_links_follow_ones_own_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = own_folder(tmp_path)
    cli = run_cli(["--config", DEBUG, f"--data.init_args.root={root}", "--trainer.logger=false", *QUIET], run=False)
    assert (cli.model.encoder.in_dim, cli.model.head.num_outputs) == (3, 2)


def test_a_folder_that_is_not_there_is_one_error_at_parse(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        run_cli(["fit", "--config", DEBUG, f"--data.init_args.root={tmp_path / 'nowhere'}", *QUIET])
    assert capsys.readouterr().err.splitlines()[0] == (
        f"error: data.init_args.root / data.init_args.labels: root: {tmp_path / 'nowhere'}: no such file or folder "
        "(read for the channel count, model.init_args.encoder.init_args.in_dim)")
    # a relative folder is also looked up in the shipped data (vecset/shipped.py): both places named
    with pytest.raises(SystemExit):
        run_cli(["fit", "--config", DEBUG, "--data.init_args.root=nowhere", *QUIET])
    assert capsys.readouterr().err.splitlines()[0] == (
        f"error: data.init_args.root / data.init_args.labels: root: nowhere: no such file or folder (tried "
        f"{tmp_path / 'nowhere'} and the shipped data, {shipped_root() / 'nowhere'}) (read for the channel count, "
        "model.init_args.encoder.init_args.in_dim)")


def test_splits_of_a_folder_without_a_split_column_and_its_errors(tmp_path):
    root = own_folder(tmp_path)
    data = TimeSeriesDataModule(str(root), val_fraction=0.25, test_fraction=0.2)
    data.setup("fit")
    assert {k: len(v) for k, v in data.splits.items()} == {"train": 24, "val": 8, "test": 8}
    assert data.class_names == ["down", "up"] and data.data_spec("fit").train_inputs[0].shape[1] == 3
    assert data.class_balance()["test"] == {"down": 4, "up": 4}
    batch = next(iter(data.train_dataloader()))
    assert batch["x"].shape[0] == 24 and batch["x"].shape[2] == 3 and batch["mask"].shape == batch["x"].shape[:2]
    # a test label that training lacks
    lines = (root / "labels.csv").read_text().splitlines()
    (root / "labels.csv").write_text("\n".join(["file,label,split", *[f"{ln},train" for ln in lines[1:-1]],
                                                f"{lines[-1].split(',')[0]},sideways,test"]) + "\n")
    with pytest.raises(ValueError) as e:
        TimeSeriesDataModule(str(root)).setup("fit")
    assert str(e.value).splitlines()[0] == (f"{root / 'labels.csv'}:41: label 'sideways' of test series s39.csv "
                                            "is not a training label (down, up); a model cannot predict a class it "
                                            "never saw")
    # a listed file that is not there
    (root / "s39.csv").unlink()
    (root / "labels.csv").write_text("\n".join(["file,label,split", *[f"{ln},train" for ln in lines[1:]]]) + "\n")
    with pytest.raises(FileNotFoundError) as e:
        TimeSeriesDataModule(str(root)).setup("fit")
    assert str(e.value).splitlines()[0] == f"{root / 'labels.csv'}:41: series file s39.csv not found in {root}"
