"""Linked config values (pipelines/config_links.py, docs/configs.md#linked-values): every
config gives the model width, the speech feature count and the phone set's class count once;
a value given twice, differently, stops the parse with one line; a saved config reloads."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import yaml
from torch import nn

from vecset.pipelines.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
DOCS = "docs/configs.md#linked-values"
B = "model.init_args.backbone.init_args.d_model"


def build(*args: str):
    """The model and data a CLI command line builds (run=False: nothing runs)."""
    cli = run_cli([*args, "--trainer.enable_progress_bar=false"], run=False)
    return cli.model, cli.datamodule


def parts(model) -> list[tuple[str, nn.Module, nn.Module]]:
    if hasattr(model, "encoders"):
        return [(t, model.encoders[t], model.heads[t]) for t in model.tasks]
    return [("", model.encoder, model.head)]


def edited(tmp_path: Path, name: str, edit) -> Path:
    cfg = yaml.safe_load((ROOT / "configs" / name).read_text())
    edit(cfg)
    path = tmp_path / f"edited_{name}"
    path.write_text(yaml.safe_dump(cfg))
    return path


def rejected(tmp_path, monkeypatch, capsys, *args: str) -> str:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        run_cli(["fit", *args])
    assert e.value.code == 2
    assert not (tmp_path / "runs").exists()  # before anything ran
    return capsys.readouterr().err


def given(cfg: dict, key: str) -> bool:
    """Whether the plain config ``cfg`` sets ``key`` (a dotted path)."""
    node: object = cfg
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def image_folder(root: Path, classes: tuple[str, ...] = ("a", "b")) -> Path:
    """An ImageFolder layout's class folders (empty: parsing reads only their names)."""
    for c in classes:
        (root / "train" / c).mkdir(parents=True, exist_ok=True)
    return root


def test_every_config_gives_each_linked_value_once_and_builds(tmp_path, monkeypatch):
    from vecset.pipelines.config_links import config_links

    monkeypatch.chdir(tmp_path)  # nothing is written, but were it, not into the checkout
    folder = image_folder(tmp_path / "images")
    linked, built = set(), {}
    for path in CONFIGS:
        text = path.read_text()
        body = "\n".join(line.split("#")[0] for line in text.splitlines())
        # d_model appears once: on the backbone (kernel_regression's Identity backbone has none)
        assert body.count("d_model:") == (0 if "torch.nn.Identity" in body else 1), path.name
        # every value the data links into the model (class counts, feature widths, channels,
        # the graph tables' sizes) is left to the data, not written again in the model
        links = config_links(yaml.safe_load(text))
        assert not [link.target for link in links if given(yaml.safe_load(text), link.target)], path.name
        linked |= {link.target.rpartition(".")[2] for link in links if link.sources[0].startswith("data.")}
        extra = ["--data.init_args.root", str(folder)] if "ImageFolderDataModule" in body else []
        model, _ = build("--config", str(path), *extra)
        built[path.stem] = model
        width = getattr(model.backbone, "d_model", None)
        for task, encoder, head in parts(model):
            if width is not None:
                assert encoder.out_width == width and head.in_width == width, (path.name, task)
    assert linked >= {"in_dim", "num_classes", "num_outputs", "in_channels", "node_dim", "num_edge_types",
                      "extra_features", "max_dist", "lap_pe_k", "num_atom_types", "num_descriptors"}
    # the values the molecule configs no longer give, as the data gives them
    from rdkit.Chem import Descriptors

    n_desc = len(Descriptors._descList)  # RDKit's 2-D descriptors
    model = built["multitask_molecules"]
    assert {t: (model.encoders[t].node_dim, model.heads[t].num_outputs, model.heads[t].extra_features)
            for t in model.tasks} == {t: (42, n, n_desc)
                                      for t, n in (("freesolv", 1), ("solubility", 1), ("b3db", 2))}
    model = built["pretrain_molecules"]
    assert (model.head.num_atom_types, model.head.num_descriptors) == (13, n_desc)
    assert (built["image_folder"].encoder.in_channels, built["image_folder"].head.num_outputs) == (3, 2)


def test_a_mismatched_width_fails_with_one_line_naming_both(tmp_path, monkeypatch, capsys):
    cfg = edited(tmp_path, "debug.yaml", lambda c: c["model"]["init_args"]["encoder"]["init_args"].update(d_model=16))
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(cfg))
    assert err == (f"error: model width given twice: model.init_args.encoder.init_args.d_model=16 but {B}=32; "
                   f"give it once, at {B} (the other follows it: {DOCS})\n")


def test_a_mismatch_on_the_command_line_fails_too(tmp_path, monkeypatch, capsys):
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(ROOT / "configs/debug.yaml"),
                   "--model.init_args.head.init_args.d_model=48")
    assert err.splitlines() == [f"error: model width given twice: model.init_args.head.init_args.d_model=48 but "
                                f"{B}=32; give it once, at {B} (the other follows it: {DOCS})"]


def test_a_value_given_twice_but_equal_is_accepted(tmp_path, monkeypatch):
    cfg = edited(tmp_path, "debug.yaml", lambda c: c["model"]["init_args"]["head"]["init_args"].update(d_model=32))
    monkeypatch.chdir(tmp_path)
    model, _ = build("--config", str(cfg))
    assert model.head.in_width == 32


def test_a_multitask_mismatch_names_the_task(tmp_path, monkeypatch, capsys):
    edit = lambda c: c["model"]["init_args"]["heads"]["mean"]["init_args"].update(d_model=8)  # noqa: E731
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(edited(tmp_path, "debug_multitask.yaml", edit)))
    assert err.splitlines() == [f"error: model width given twice: model.init_args.heads.mean.init_args.d_model=8 but "
                                f"{B}=32; give it once, at {B} (the other follows it: {DOCS})"]


def test_a_phone_set_mismatch_names_the_phone_set(tmp_path, monkeypatch, capsys):
    edit = lambda c: c["model"]["init_args"]["head"]["init_args"].update(num_classes=61)  # noqa: E731
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(edited(tmp_path, "speech_frames_debug.yaml", edit)))
    assert err.splitlines() == [
        "error: class count (the phone set's labels) given twice: model.init_args.head.init_args.num_classes=61 but "
        "data.init_args.phone_set=festival (50 labels); give it once, at data.init_args.phone_set "
        f"(the other follows it: {DOCS})"]


def test_an_unlinked_required_value_left_out_is_named(tmp_path, monkeypatch, capsys):
    # debug.yaml's data links no feature width, so the VectorEncoder's in_dim is the config's to give
    cfg = edited(tmp_path, "debug.yaml", lambda c: c["model"]["init_args"]["encoder"]["init_args"].pop("in_dim"))
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(cfg))
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        "error: model.init_args.encoder.init_args: the following arguments are required: in_dim "
        "(vecset.encoders.VectorEncoder)"]


def test_d_model_on_the_command_line_reaches_encoder_head_and_decoder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, _ = build("--config", str(ROOT / "configs/debug.yaml"), f"--{B}=48")
    assert model.backbone.d_model == 48
    assert model.encoder.proj.weight.shape == (48, 2)  # in_dim 2 -> d_model
    assert model.head.proj.weight.shape == (2, 48)  # d_model -> 2 classes
    model, _ = build("--config", str(ROOT / "configs/g2p_debug.yaml"), f"--{B}=24")
    assert model.encoder.out_width == model.head.in_width == model.head.decoder.d_model == 24
    model, _ = build("--config", str(ROOT / "configs/debug_multitask.yaml"), f"--{B}=40")
    assert {t: (e.out_width, h.in_width) for t, e, h in parts(model)} == {"above": (40, 40), "mean": (40, 40)}


def test_speech_classes_and_features_follow_the_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = str(ROOT / "configs/speech_frames_debug.yaml")
    model, dm = build("--config", config)
    assert model.head.proj.weight.shape == (50, 16) and len(dm.class_names) == 50  # festival
    assert model.encoder.proj.weight.shape == (16, 40)  # num_mel_bins 40 (the data's default)
    model, dm = build("--config", config, "--data.init_args.phone_set=timit39", "--data.init_args.features.num_mel_bins=24")
    assert model.head.num_classes == len(dm.class_names) == 39
    assert model.encoder.proj.weight.shape == (16, 24)
    model, _ = build("--config", config, "--data.init_args.features.kind=mfcc", "--data.init_args.features.num_ceps=13")
    assert model.encoder.in_dim == 13


def test_a_fits_saved_config_reloads(tmp_path):
    with contextlib.chdir(tmp_path):
        run_cli(["fit", "--config", str(ROOT / "configs/debug.yaml"), "--trainer.enable_progress_bar=false",
                 "--trainer.max_epochs=1", "--data.init_args.n_train=128", "--plots=false"])
        run = tmp_path / "runs" / "debug" / "version_0"
        saved = run / "config.yaml"
        text = yaml.safe_load(saved.read_text())
        # the saved config is what ran: the linked values written out (they agree), and the
        # encoder's in_dim, which debug.yaml gives itself (no data value links it)
        assert text["model"]["init_args"]["encoder"]["init_args"] | {} == {"in_dim": 2, "d_model": 32,
                                                                          "positional": "none", "max_len": None}
        assert text["model"]["init_args"]["backbone"]["init_args"]["d_model"] == 32
        ckpt = next((run / "checkpoints").glob("best-*.ckpt"))
        cli = run_cli(["test", "--config", str(saved), "--ckpt_path", str(ckpt), "--trainer.enable_progress_bar=false",
                       "--plots=false"])
        assert cli.model.encoder.out_width == 32


def test_a_multitask_saved_config_reloads(tmp_path, monkeypatch):
    # saved as SaveConfigCallback saves a run's config.yaml (parser.save), without the run
    monkeypatch.chdir(tmp_path)
    cli = run_cli(["--config", str(ROOT / "configs/debug_multitask.yaml"), f"--{B}=24"], run=False)
    cli.parser.save(cli.config, tmp_path / "config.yaml", skip_none=False, multifile=False)
    saved = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert saved["model"]["init_args"]["heads"]["mean"]["init_args"]["d_model"] == 24
    model, _ = build("--config", str(tmp_path / "config.yaml"))
    assert {t: (e.out_width, h.in_width) for t, e, h in parts(model)} == {"above": (24, 24), "mean": (24, 24)}


def test_a_printed_config_reloads(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        run_cli(["fit", "--config", str(ROOT / "configs/speech_frames_debug.yaml"), "--print_config"])
    printed = yaml.safe_load(capsys.readouterr().out)
    # fit's own options (ckpt_path, weights_only) left out: built here without a subcommand
    printed = {k: printed[k] for k in ("seed_everything", "trainer", "model", "data")}
    encoder = printed["model"]["init_args"]["encoder"]["init_args"]
    assert encoder["d_model"] is None and encoder["in_dim"] is None  # printed before links apply: they follow
    (tmp_path / "printed.yaml").write_text(yaml.safe_dump(printed))
    model, _ = build("--config", str(tmp_path / "printed.yaml"))
    assert model.encoder.proj.weight.shape == (16, 40) and model.head.num_classes == 50


def test_filled_gives_a_plain_config_the_linked_values_as_the_cli_does():
    from vecset.pipelines.config_links import filled

    cfg = {"model": {"class_path": "vecset.pipelines.TaskModule", "init_args": {
        "encoder": {"class_path": "vecset.encoders.SpeechEncoder", "init_args": {"window": 4}},
        "backbone": {"class_path": "vecset.backbone.Backbone", "init_args": {"d_model": 24, "depth": 1, "heads": 2}},
        "head": {"class_path": "vecset.heads.LabelingHead", "init_args": {"num_classes": 7}}}},
        "data": {"class_path": "vecset.pipelines.speech.data.SpeechFramesDataModule",
                 "init_args": {"features": {"num_mel_bins": 20}, "phone_set": "timit39"}}}
    out = filled(cfg)
    enc, head = out["model"]["init_args"]["encoder"]["init_args"], out["model"]["init_args"]["head"]["init_args"]
    assert enc == {"window": 4, "d_model": 24, "in_dim": 20}
    assert head == {"num_classes": 7, "d_model": 24}  # a value the config sets is kept
    assert "d_model" not in cfg["model"]["init_args"]["encoder"]["init_args"]  # the input is not changed


def test_the_graph_settings_follow_the_molecule_data(tmp_path, monkeypatch, capsys):
    """A molecule data module links its max_dist and lap_pe_k into the GraphEncoder (its tables
    are sized by them): given once, at the data; given differently, one line naming both."""
    monkeypatch.chdir(tmp_path)
    model, _ = build("--config", str(ROOT / "configs/freesolv.yaml"), "--data.init_args.features.max_dist=5",
                     "--data.init_args.features.lap_pe_k=2")
    assert (model.encoder.max_dist, model.encoder.lap_pe_k) == (5, 2)
    cfg = edited(tmp_path, "freesolv.yaml", lambda c: c["model"]["init_args"]["encoder"]["init_args"].update(max_dist=6))
    (tmp_path / "again").mkdir()
    err = rejected(tmp_path / "again", monkeypatch, capsys, "--config", str(cfg))
    assert ("error: graph max_dist given twice: model.init_args.encoder.init_args.max_dist=6 but "
            "data.init_args.features.max_dist=8; give it once, at data.init_args.features.max_dist") in err


def test_the_molecule_widths_and_outputs_follow_the_data(tmp_path, monkeypatch):
    """The atom featurizer's widths go to the GraphEncoder, the descriptor count and the targets'
    or classes' count to the SequenceHead: none of them is in the molecule configs."""
    from rdkit.Chem import Descriptors

    monkeypatch.chdir(tmp_path)
    # freesolv.yaml's atoms: 42 features, one more with the Gasteiger charge, two more with the surface
    model, _ = build("--config", str(ROOT / "configs/freesolv.yaml"))
    assert (model.encoder.node_dim, model.encoder.num_edge_types) == (45, 6)
    assert model.encoder.proj.weight.shape[1] == 45
    assert (model.head.extra_features, model.head.num_outputs) == (len(Descriptors._descList), 1)
    model, _ = build("--config", str(ROOT / "configs/freesolv.yaml"), "--data.init_args.features.descriptors=false",
                     "--data.init_args.target_columns=[expt, calc]")
    assert (model.head.extra_features, model.head.num_outputs) == (0, 2)
    model, _ = build("--config", str(ROOT / "configs/freesolv.yaml"), "--data.init_args.features.surface=false")
    assert model.encoder.node_dim == 43
    model, _ = build("--config", str(ROOT / "configs/freesolv.yaml"), "--data.init_args.features.charges=false",
                     "--data.init_args.features.surface=false")
    assert model.encoder.proj.weight.shape[1] == 42
    # the physics token: one switch at the data, the encoder's token follows
    assert model.encoder.physics_proj is None
    model, _ = build("--config", str(ROOT / "configs/freesolv.yaml"), "--data.init_args.features.physics=true")
    assert model.encoder.physics_proj is not None
    # multitask_molecules.yaml and pretrain_molecules.yaml: test_every_config_gives_each_linked_value_once_and_builds


def test_a_molecule_width_given_differently_is_one_line_naming_both(tmp_path, monkeypatch, capsys):
    edit = lambda c: c["model"]["init_args"]["head"]["init_args"].update(extra_features=100)  # noqa: E731
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(edited(tmp_path, "freesolv.yaml", edit)))
    n = len(__import__("rdkit.Chem.Descriptors", fromlist=["_descList"])._descList)
    assert err.splitlines() == [
        f"error: descriptor count given twice: model.init_args.head.init_args.extra_features=100 but "
        f"data.init_args.features.descriptors=true ({n} RDKit 2-D descriptors); give it once, at data.init_args.features.descriptors "
        f"(the other follows it: {DOCS})"]
    edit = lambda c: c["model"]["init_args"]["encoders"]["b3db"]["init_args"].update(node_dim=40)  # noqa: E731
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(edited(tmp_path, "multitask_molecules.yaml", edit)))
    assert err.splitlines()[0] == (
        "error: atom feature width given twice: model.init_args.encoders.b3db.init_args.node_dim=40 but "
        "data.init_args.tasks.b3db.init_args.features.charges=false (42 atom features with charges false, surface false); "
        f"give it once, at data.init_args.tasks.b3db.init_args.features.charges (the other follows it: {DOCS})")
    edit = lambda c: c["model"]["init_args"]["head"]["init_args"].update(num_outputs=3)  # noqa: E731
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(edited(tmp_path, "b3db.yaml", edit)))
    assert err.splitlines()[0] == (
        "error: output count given twice: model.init_args.head.init_args.num_outputs=3 but "
        "data.init_args.classes=['BBB-', 'BBB+'] (2 classes); give it once, at data.init_args.classes "
        f"(the other follows it: {DOCS})")


def test_the_image_channels_and_classes_follow_the_data(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    model, _ = build("--config", str(ROOT / "configs/digits.yaml"))
    assert (model.encoder.in_channels, model.head.num_outputs) == (1, 10)
    model, _ = build("--config", str(ROOT / "configs/cifar10.yaml"))
    assert (model.encoder.in_channels, model.head.num_outputs) == (3, 10)
    # an image folder: its class folders' count (their names only are read at parse) and its channels
    folder = image_folder(tmp_path / "images", ("cat", "dog", "eel"))
    model, _ = build("--config", str(ROOT / "configs/image_folder.yaml"), "--data.init_args.root", str(folder),
                     "--data.init_args.channels=1", "--data.init_args.mean=[0.5]", "--data.init_args.std=[0.5]")
    assert (model.encoder.in_channels, model.head.num_outputs) == (1, 3)
    edit = lambda c: c["model"]["init_args"]["head"]["init_args"].update(num_outputs=7)  # noqa: E731
    (tmp_path / "again").mkdir()
    err = rejected(tmp_path / "again", monkeypatch, capsys, "--config", str(edited(tmp_path, "digits.yaml", edit)))
    assert err.splitlines() == [
        "error: class count given twice: model.init_args.head.init_args.num_outputs=7 but the data, DigitsDataModule "
        "(data.class_path), has 10 classes; leave model.init_args.head.init_args.num_outputs out (it follows the "
        f"data: {DOCS})"]


def test_an_image_folder_that_is_not_there_says_so_at_parse(tmp_path, monkeypatch, capsys):
    """Without the folder the class count is unknown: the parse stops naming the root; a config
    that gives num_outputs (a run's saved config.yaml) keeps it, and setup checks it."""
    missing = tmp_path / "nowhere"
    err = rejected(tmp_path, monkeypatch, capsys, "--config", str(ROOT / "configs/image_folder.yaml"),
                   "--data.init_args.root", str(missing))
    assert err.splitlines()[0] == (
        f"error: model.init_args.head.init_args.num_outputs is not set: SequenceHead needs it, and "
        f"data.init_args.root={missing} (0 class folders in {missing}) does not tell it (the class count; give the "
        f"source a value that does: {DOCS})")
    model, _ = build("--config", str(ROOT / "configs/image_folder.yaml"), "--data.init_args.root", str(missing),
                     "--model.init_args.head.init_args.num_outputs=4")
    assert model.head.num_outputs == 4


def test_the_graph_and_tag_widths_follow_their_data(tmp_path, monkeypatch):
    from vecset.pipelines.graphs.data import node_width

    monkeypatch.chdir(tmp_path)
    model, _ = build("--config", str(ROOT / "configs/karate.yaml"), "--data.init_args.max_dist=5")
    assert (model.encoder.node_dim, model.encoder.num_edge_types, model.encoder.max_dist, model.encoder.lap_pe_k) \
        == (1, 2, 5, 2)
    assert node_width({"kind": ["a", "b"]}, ["mass"])[0] == 4  # one-hot with "other", one numeric column
    model, _ = build("--config", str(ROOT / "configs/pos_conllu.yaml"))
    assert model.head.num_classes == 17


def test_filled_gives_the_data_class_values_too():
    from vecset.pipelines.config_links import filled

    cfg = yaml.safe_load((ROOT / "configs/digits.yaml").read_text())
    m = cfg["model"]["init_args"]
    m["encoder"]["init_args"].pop("in_channels", None), m["head"]["init_args"].pop("num_outputs", None)
    out = filled({k: cfg[k] for k in ("model", "data")})
    assert out["model"]["init_args"]["encoder"]["init_args"]["in_channels"] == 1
    assert out["model"]["init_args"]["head"]["init_args"]["num_outputs"] == 10
