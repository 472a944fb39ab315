"""Data modules take their options in typed groups (dataclasses: ``pipelines/data/options.py``,
``speech/options.py``, ``molecules/options.py``), which the CLI reads as nested config sections;
no data module takes more than 15 top-level arguments; the molecule 3-D geometry is given once,
at the data, and linked to the graph encoder."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import pytorch_lightning as pl
import yaml

from vecset.pipelines.cli import run_cli
from vecset.pipelines.data.options import DevicePlacement, as_group
from vecset.pipelines.speech.options import SpeechFeatures

ROOT = Path(__file__).resolve().parents[3]
DOCS = "docs/configs.md#linked-values"


def facade_data_modules() -> dict[str, type]:
    import vecset.pipelines as facade

    facade.import_all()
    found = {name: getattr(facade, name) for name in facade.__all__}
    return {n: c for n, c in found.items() if isinstance(c, type) and issubclass(c, pl.LightningDataModule)}


def test_no_data_module_of_the_facade_takes_more_than_15_arguments():
    modules = facade_data_modules()
    assert {"SpeechFramesDataModule", "MoleculeDataModule", "ImageFolderDataModule"} <= set(modules)
    counts = {n: len(inspect.signature(c.__init__).parameters) - 1 for n, c in modules.items()}  # less self
    assert {n: k for n, k in counts.items() if k > 15} == {}


def build(tmp_path: Path, monkeypatch, *args: str):
    monkeypatch.chdir(tmp_path)
    cli = run_cli([*args, "--trainer.enable_progress_bar=false"], run=False)
    return cli.model, cli.datamodule


def rejected(tmp_path, monkeypatch, capsys, *args: str) -> list[str]:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        run_cli(["fit", *args])
    assert e.value.code == 2 and not (tmp_path / "runs").exists()
    return capsys.readouterr().err.splitlines()


def written(tmp_path: Path, name: str, cfg: dict) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_a_group_is_a_nested_mapping_in_yaml_and_its_values_reach_the_data_and_the_links(tmp_path, monkeypatch):
    data = {"data": {"init_args": {"features": {"kind": "mfcc", "num_ceps": 20},
                                   "placement": {"length_buckets": [64, 128]}}}}
    model, dm = build(tmp_path, monkeypatch, "--config", str(ROOT / "configs/speech_frames_debug.yaml"),
                      "--config", written(tmp_path, "groups.yaml", data))
    assert (dm.featurizer.kind, dm.featurizer.dim, dm.buckets.spec) == ("mfcc", 20, [64, 128])
    assert dm.max_utterances == 2  # the config's other group (splits) is kept
    assert model.encoder.in_dim == 20  # the feature count, linked from data.init_args.features.num_ceps


def test_print_config_shows_each_group_as_a_section(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        run_cli(["fit", "--config", str(ROOT / "configs/freesolv.yaml"), "--data.init_args.split.seed=4",
                 "--print_config"])
    init = yaml.safe_load(capsys.readouterr().out)["data"]["init_args"]
    assert init["split"] == {"method": "random", "seed": 4, "column": "split", "val_fraction": 0.1}
    assert init["features"] == {"max_atoms": 100, "max_dist": 8, "lap_pe_k": 0, "descriptors": True, "geometry": True,
                                "charges": True, "surface": True, "conformers": 1, "physics": False}
    assert init["placement"] == {"on_device": False, "device_memory_share": 0.5, "length_buckets": None,
                                 "bucket_batches": False}


def test_an_unknown_key_in_a_group_is_one_line_naming_the_group_and_the_key(tmp_path, monkeypatch, capsys):
    bad = written(tmp_path, "bad.yaml", {"data": {"init_args": {"features": {"n_mels": 80}}}})
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(ROOT / "configs/speech_frames_debug.yaml"),
                   "--config", bad)
    assert err[0] == ("error: data.init_args: Group 'features' does not accept option 'n_mels' "
                      "(vecset.pipelines.SpeechFramesDataModule)")
    # a key that moved into a group, at the top level: the message names it
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(ROOT / "configs/speech_frames_debug.yaml"),
                   "--data.init_args.num_mel_bins=80")
    assert err[0].startswith("error: data.init_args: ") and "num_mel_bins" in err[0]


def test_a_group_from_a_mapping_and_its_unknown_keys():
    """A dumped config's ``init_args`` (plain mappings) builds the module as its groups do."""
    assert as_group(SpeechFeatures, {"kind": "mfcc"}, "features") == SpeechFeatures(kind="mfcc")
    assert as_group(DevicePlacement, None, "placement") == DevicePlacement()
    with pytest.raises(ValueError, match=r"^features: unknown key n_mels \(it takes kind, num_mel_bins, num_ceps\)$"):
        as_group(SpeechFeatures, {"n_mels": 80}, "features")


def encoder_geometry(cfg: dict) -> str | None:
    return cfg["model"]["init_args"]["encoder"]["init_args"].get("geometry")


@pytest.mark.parametrize("name", ["freesolv.yaml", "solubility.yaml"])
def test_geometry_is_given_once_at_the_data_and_reaches_the_encoder(tmp_path, monkeypatch, name):
    cfg = yaml.safe_load((ROOT / "configs" / name).read_text())
    assert encoder_geometry(cfg) is None and cfg["data"]["init_args"]["features"]["geometry"] is True
    model, dm = build(tmp_path, monkeypatch, "--config", str(ROOT / "configs" / name))
    assert model.encoder.geometry == "distance_gaussian" and dm.featurizer.geometry is True
    model, dm = build(tmp_path, monkeypatch, "--config", str(ROOT / "configs" / name),
                      "--data.init_args.features.geometry=false", "--data.init_args.features.surface=false")
    assert model.encoder.geometry == "none" and model.encoder.distance_bias is None and not dm.featurizer.geometry


def test_geometry_given_twice_is_accepted_when_equal_and_one_line_when_not(tmp_path, monkeypatch, capsys):
    cfg = yaml.safe_load((ROOT / "configs/freesolv.yaml").read_text())
    cfg["model"]["init_args"]["encoder"]["init_args"]["geometry"] = "distance_gaussian"  # the old double form
    model, _ = build(tmp_path, monkeypatch, "--config", written(tmp_path, "twice.yaml", cfg))
    assert model.encoder.geometry == "distance_gaussian"
    cfg["data"]["init_args"]["features"].update(geometry=False, surface=False)
    (tmp_path / "again").mkdir()
    err = rejected(tmp_path / "again", monkeypatch, capsys, "--config", written(tmp_path, "differ.yaml", cfg))
    assert err == ["error: 3-D geometry given twice: model.init_args.encoder.init_args.geometry=distance_gaussian "
                   "but data.init_args.features.geometry=false; give it once, at data.init_args.features.geometry "
                   f"(the other follows it: {DOCS})"]


def test_the_old_flat_forms_are_one_line_naming_the_group(tmp_path, monkeypatch, capsys):
    """Before the groups, ``split: scaffold`` and ``geometry: true`` were top-level arguments."""
    old = written(tmp_path, "old.yaml", {"data": {"init_args": {"split": "scaffold"}}})
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(ROOT / "configs/b3db.yaml"), "--config", old)
    assert err[0] == ("error: data.init_args.split: expected a mapping of method, seed, column, val_fraction (an "
                      "option group); got scaffold (vecset.pipelines.MoleculeDataModule)")
    old = written(tmp_path, "old2.yaml", {"data": {"init_args": {"geometry": True}}})
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(ROOT / "configs/freesolv.yaml"), "--config", old)
    assert err[0] == "error: data.init_args: Option 'geometry' is not accepted (vecset.pipelines.MoleculeDataModule)"
