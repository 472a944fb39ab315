"""bench/molecule_designs.py (issue #47): the plan (designs x sets x splits x seeds and their
overrides), the choice per set on validation only, and a ``--dry`` run through ``vecset fit``
that writes rows, the choice and the figure, and resumes without running finished rows."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import molecule_designs as md  # noqa: E402


def test_the_plan_covers_every_design_split_and_seed_with_its_overrides():
    runs = md.plan(list(md.SETS), list(md.DESIGNS), None, list(md.SEEDS))
    assert len(runs) == (5 * 3 + 3 + 3) * len(md.DESIGNS)
    assert {(r.split, r.seed) for r in runs if r.set == "freesolv"} == {(s, e) for s in range(5) for e in range(3)}
    args = {r.design: md.fit_args(r, Path("/x.csv"), []) for r in runs if r.set == "b3db" and r.seed == 1}
    assert "--seed_everything=1" in args["2d"] and "--data.init_args.split.seed=0" in args["2d"]
    geo = ["--data.init_args.features.geometry=true", "--model.init_args.encoder.init_args.geometry=distance_gaussian"]
    gps = ["--model.init_args.backbone.init_args.local_mp=gine"]
    # each design sets every option: the shipped configs hold the winners (b3db.yaml: gps), not 2-D
    off = ["--data.init_args.features.geometry=false", "--model.init_args.encoder.init_args.geometry=none"]
    no_mp = ["--model.init_args.backbone.init_args.local_mp=none"]
    assert set(off + no_mp) <= set(args["2d"])
    assert set(geo + no_mp) <= set(args["3d"]) and not set(gps) & set(args["3d"])
    assert set(gps + off) <= set(args["gps"]) and not set(geo) & set(args["gps"])
    assert set(geo + gps) <= set(args["both"])
    # the solvation atom features: off in the four graph designs, charges then charges + surface on 3d
    plain = ["--data.init_args.features.charges=false", "--data.init_args.features.surface=false"]
    assert all(set(plain) <= set(args[d]) for d in ("2d", "3d", "gps", "both"))
    assert set(geo + no_mp + ["--data.init_args.features.charges=true", "--data.init_args.features.surface=false"]) <= set(args["3d+charges"])
    assert set(geo + no_mp + ["--data.init_args.features.charges=true", "--data.init_args.features.surface=true"]) <= set(args["3d+surface"])
    assert set(geo + no_mp + plain + ["--data.init_args.features.conformers=10"]) <= set(args["3d+confs"])
    # the readout and the conformers too: the shipped FreeSolv and solubility configs read out additively
    pooled, additive = "--model.init_args.head.init_args.additive=false", "--model.init_args.head.init_args.additive=true"
    assert all(pooled in args[d] for d in ("2d", "3d", "gps", "both", "3d+charges", "3d+surface", "3d+confs"))
    assert additive in args["3d+additive"] and pooled not in args["3d+additive"]
    assert set(geo + no_mp + ["--data.init_args.features.charges=true", "--data.init_args.features.surface=true", additive]) \
        <= set(args["3d+surface+additive"])
    assert all("--data.init_args.features.conformers=1" in a for d, a in args.items() if d != "3d+confs")
    assert "--plots=false" not in args["2d"]  # B3DB's ROC-AUC comes from its test report


def test_the_choice_reads_validation_only():
    rows = [{"set": "freesolv", "design": "2d", "val_rmse": 1.0, "test_rmse": 9.0},
            {"set": "freesolv", "design": "3d", "val_rmse": 2.0, "test_rmse": 0.1},
            {"set": "freesolv", "design": "3d", "val_rmse": 0.2, "test_rmse": 0.1},  # mean 1.1: 2d wins
            {"set": "b3db", "design": "2d", "val_acc": 0.7, "test_auc": 0.99},
            {"set": "b3db", "design": "gps", "val_acc": 0.8, "test_auc": 0.5}]
    chosen = md.choose(rows)
    assert chosen["freesolv"]["design"] == "2d" and chosen["freesolv"]["means"]["3d"] == pytest.approx(1.1)
    assert chosen["b3db"]["design"] == "gps"  # accuracy: higher is better


def test_dry_run_writes_rows_choice_and_figure_and_resumes(tmp_path, monkeypatch):
    out = tmp_path / "designs.json"
    md.main(["--dry", "--designs", "2d", "both", "--out", str(out)])
    result = json.loads(out.read_text())
    assert [(r["set"], r["design"], r["split"], r["seed"]) for r in result["rows"]] == \
        [("freesolv", "2d", 0, 0), ("freesolv", "both", 0, 0)]
    for r in result["rows"]:
        assert math.isfinite(r["val_rmse"]) and math.isfinite(r["test_rmse"]) and r["epochs"] <= 1
    best = min(result["rows"], key=lambda r: r["val_rmse"])["design"]
    assert result["chosen"]["freesolv"]["design"] == best
    assert out.with_suffix(".png").stat().st_size > 1000
    # the run of "both" trained with both options on
    config = (Path(result["rows"][1]["run_dir"]) / "config.yaml").read_text()
    assert "geometry: distance_gaussian" in config and "local_mp: gine" in config and "geometry: true" in config

    def no_fit(*a, **k):
        raise AssertionError("a finished row was run again")

    monkeypatch.setattr(md, "fit_in_process", no_fit)
    md.main(["--dry", "--designs", "2d", "both", "--out", str(out)])
    assert json.loads(out.read_text())["rows"] == result["rows"]
