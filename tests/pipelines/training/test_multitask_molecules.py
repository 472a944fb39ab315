"""configs/multitask_molecules.yaml builds and fits 2 steps from the CLI, on tiny CSVs."""

import contextlib
import csv
import json
from pathlib import Path

from vecset.pipelines.cli import run_cli

ROOT = Path(__file__).resolve().parents[3]
SMILES = ["CCO", "CCN", "CCC", "c1ccccc1", "CC(=O)O", "CCCl", "OCCO", "CCOC", "CN", "CCCC", "c1ccncc1", "CC=O"]


def _write(path: Path, header: list[str], rows: list[list]) -> str:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return str(path)


def test_multitask_molecules_config_fits_two_steps(tmp_path):
    # line 14: a SMILES RDKit rejects, skipped and listed in the task's own skipped_rows.csv
    fs = _write(tmp_path / "fs.csv", ["smiles", "expt"], [[s, i * 0.1] for i, s in enumerate(SMILES)] + [["C1CC", 1.0]])
    sol = _write(tmp_path / "sol.csv", ["smiles", "logS", "split"],
                 [[s, -i * 0.2, ("test", "val", "train", "train")[i % 4]] for i, s in enumerate(SMILES)])
    bb = _write(tmp_path / "bb.csv", ["smiles", "label"], [[s, "BBB+" if i % 2 else "BBB-"] for i, s in enumerate(SMILES)])
    args = ["fit", "--config", str(ROOT / "configs" / "multitask_molecules.yaml"), "--trainer.enable_progress_bar=false",
            "--trainer.max_steps=2", "--plots=false", "--data.init_args.tasks.b3db.init_args.split.method=random"]
    for task, path in (("freesolv", fs), ("solubility", sol), ("b3db", bb)):
        args += [f"--data.init_args.tasks.{task}.init_args.csv_path={path}",
                 f"--data.init_args.tasks.{task}.init_args.features.descriptors=false",
                 f"--model.init_args.heads.{task}.init_args.extra_features=0"]
    with contextlib.chdir(tmp_path):
        run_cli(args)
        res = json.loads(next((tmp_path / "runs").rglob("results.json")).read_text())
        skipped = list((tmp_path / "runs").rglob("skipped_rows.csv"))
    assert {"freesolv/test_rmse", "solubility/test_rmse", "b3db/test_acc"} <= set(res["test"])
    assert [p.parent.name for p in skipped] == ["freesolv"]
    with skipped[0].open() as f:
        assert [r["line"] for r in csv.DictReader(f)] == ["14"]
