"""bench/predictors.py --dry: ``vecset predict --model freesolv`` on 2 inputs in a fresh process,
its row in the JSON."""

import json

from bench import predictors


def test_dry_run_times_the_command(tmp_path):
    out = tmp_path / "predictors.json"
    assert predictors.main(["--dry", "--out", str(out)]) == out
    d = json.loads(out.read_text())
    assert d["command"].startswith("python bench/predictors.py --dry")
    (row,) = d["rows"]
    assert "error" not in row, row
    assert row["model"] == "freesolv" and row["inputs"] == 2 and row["rows"] == 2 and row["wall_s_median"] > 0
