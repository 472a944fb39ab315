"""A user's own model predicts as a shipped one does (issue 60): a tiny molecule run trained with
the ``vecset`` command, packed with ``vecset pack``, predicted through ``vecset predict --model``
with the run folder and with the packed folder and through ``vecset.pretrained(path)``: the same
columns as the shipped FreeSolv predictor, the same values both ways, a card written from the run."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from molecule_run_helpers import GEOMETRY_CONFIG

import vecset
from vecset.pipelines.pretrained import pretrained

ROOT = Path(__file__).resolve().parents[2]
DRUGS = "name,smiles\nethanol,CCO\nbroken,C1CC\nsodium acetate,CC(=O)[O-].[Na+]\nphenol,c1ccccc1O\n"


def vecset_command(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    code = "import sys; from vecset.command import main; sys.argv[0] = 'vecset'; main()"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """(the folder, the run folder, the packed folder): ``vecset fit`` then ``vecset pack``."""
    tmp = tmp_path_factory.mktemp("own")
    with open(ROOT / "data" / "molecules" / "freesolv.csv") as f:
        (tmp / "mine.csv").write_text("".join(f.readlines()[:41]))  # 40 molecules
    (tmp / "mine.yaml").write_text(GEOMETRY_CONFIG.format(csv=tmp / "mine.csv", cache=tmp / "cache"))
    (tmp / "drugs.csv").write_text(DRUGS)
    # a mean-variance head, as the shipped FreeSolv predictor's ensemble has a spread: its columns (expt_std, conformer)
    fit = vecset_command(["fit", "--config", "mine.yaml", "--model.init_args.head.init_args.regression_loss=gaussian_nll",
                          "--data.init_args.split.seed=3"], tmp)
    assert fit.returncode == 0, fit.stderr[-3000:]
    run = tmp / "runs" / "mine" / "version_0"
    packed = vecset_command(["pack", str(run), "packed"], tmp)
    assert packed.returncode == 0, packed.stderr[-3000:]
    assert packed.stdout.startswith("packed packed: MoleculePredictor, test through the predictor")
    return tmp, run, tmp / "packed"


def read(path: Path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))


def test_run_folder_and_packed_folder_predict_alike_with_the_shipped_columns(own):
    tmp, run, packed = own
    for model, out in ((run, "from_run.csv"), (packed, "from_packed.csv")):
        done = vecset_command(["predict", "--model", str(model), "--input", "drugs.csv", "--out", out], tmp)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "1 of 4 inputs could not be predicted" in done.stderr
    from_run, from_packed = read(tmp / "from_run.csv"), read(tmp / "from_packed.csv")
    assert from_run == from_packed  # every value, as written
    shipped = pretrained("freesolv").columns
    assert list(from_run[0]) == ["name", "smiles", *shipped[1:]]  # the input's columns, then the shipped ones
    assert [r["name"] for r in from_run] == ["ethanol", "broken", "sodium acetate", "phenol"]
    assert from_run[1]["error"].startswith("invalid SMILES 'C1CC'") and from_run[1]["expt"] == ""
    # a salt with a metal: FreeSolv's molecules have neither, flagged whatever its similarity
    assert from_run[2]["out_of_domain"] == "True"
    assert "2 fragments (a salt or mixture), which no training molecule has" in from_run[2]["out_of_domain_reason"]
    assert "metal atom Na" in from_run[2]["out_of_domain_reason"]
    assert float(from_run[0]["expt_std"]) > 0 and from_run[0]["conformer"] == "True"


def test_the_python_api_takes_a_run_or_a_packed_folder(own):
    tmp, run, packed = own
    a = vecset.pretrained(str(run)).predict(["CCO", "c1ccccc1O"], as_frame=True)
    b = vecset.pretrained(packed).predict(["CCO", "c1ccccc1O"], as_frame=True)
    assert list(a.columns) == pretrained("freesolv").columns
    assert a.equals(b)  # the same bits: the run folder is packed in memory as vecset pack packs it
    cli = read(tmp / "from_packed.csv")
    assert float(cli[0]["expt"]) == pytest.approx(a.loc[0, "expt"], rel=1e-5)


def test_the_card_is_written_from_the_run(own):
    tmp, run, packed = own
    card = json.loads((packed / "card.json").read_text())
    results = json.loads((run / "results.json").read_text())
    assert card["predictor"] == "vecset.pipelines.molecules.predictor.MoleculePredictor"
    assert card["name"] == "mine" and card["run_dir"] == str(run)
    assert card["data_files"] == [{"argument": "csv_path", "path": str(tmp / "mine.csv"),
                                   "sha256": hashlib.sha256((tmp / "mine.csv").read_bytes()).hexdigest(),
                                   "bytes": (tmp / "mine.csv").stat().st_size}]
    assert card["split"]["split"]["seed"] == 3 and card["split"]["split"]["method"] == "random"
    assert card["run"]["test"] == results["test"] and card["run"]["global_steps"] == 2
    assert card["test_through_predictor"]["count"] == 4  # 40 molecules, 10% test
    assert card["config"] == str(run / "config.yaml") and len(card["date"]) == 10
    readme = (packed / "README.md").read_text()
    assert card["data_files"][0]["sha256"] in readme and json.dumps(results["test"]) in readme
    assert "regression_loss: gaussian_nll" in readme and "conformers: 2" in readme  # the config


def test_pack_refuses_a_folder_that_is_not_a_run(tmp_path):
    done = vecset_command(["pack", str(tmp_path), str(tmp_path / "out")], tmp_path)
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"error: {tmp_path}: no config.yaml (a run folder is runs/<config>/version_<n>, as vecset fit writes it)"]
    assert not (tmp_path / "out").exists()


def test_a_run_whose_data_is_gone_is_one_line(own, tmp_path):
    import shutil

    import yaml

    _, run, _ = own
    moved = tmp_path / "runs" / "mine" / "version_0"
    shutil.copytree(run, moved)
    cfg = yaml.safe_load((moved / "config.yaml").read_text())
    cfg["data"]["init_args"]["csv_path"] = str(tmp_path / "gone.csv")
    (moved / "config.yaml").write_text(yaml.safe_dump(cfg))
    done = vecset_command(["predict", "--model", str(moved), "--smiles", "CCO"], tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {moved / 'config.yaml'}: the run's data could not be read again (")
    assert "gone.csv" in line


def test_predict_with_config_and_checkpoint_writes_the_rows_of_predict_model(own):
    """One output format for every predict path: LightningCLI's ``vecset predict --config ...
    --ckpt_path ...`` on a CSV gives the columns and values of ``vecset predict --model RUN_DIR``
    (the input's columns kept, the invalid row in place with its error, the domain and spread
    columns), not its own ``line,smiles,...`` with the bad rows in another file."""
    tmp, run, _ = own
    from vecset.pipelines.pack import best_checkpoint

    best = best_checkpoint(run)[1]  # the checkpoint vecset predict --model RUN_DIR reads
    done = vecset_command(["predict", "--config", str(run / "config.yaml"), "--ckpt_path", str(best),
                           "--data.init_args.predict_csv", "drugs.csv"], tmp)
    assert done.returncode == 0, done.stderr[-3000:]
    path = Path(done.stdout.strip().splitlines()[-1].removeprefix("predictions: "))
    assert path.name == "predictions.csv" and not (path.parent / "invalid_rows.csv").exists()
    assert "1 of 4 inputs could not be predicted" in done.stderr
    through_cli = read(tmp / path if not path.is_absolute() else path)
    from_run = read(tmp / "from_run.csv")  # vecset predict --model RUN_DIR (the first test)
    assert list(through_cli[0]) == list(from_run[0])
    assert through_cli == from_run
