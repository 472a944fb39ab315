"""bench/fashion_equal_time.py --dry (issue 46): the CCT and the CNN train 2 steps each on a tiny
synthetic Fashion-MNIST and become rows with the fields the issue asks for, plus one figure."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "pipelines" / "data"))

from test_fashion_mnist import write_dataset  # noqa: E402

from bench import fashion_equal_time as fet  # noqa: E402


def test_dry_run_writes_a_row_per_variant(tmp_path):
    root = write_dataset(tmp_path / "fm", n_train=200, n_test=80)
    out = fet.main(["--dry", "--models", "cct", "cnn", "--root", str(root), "--tag", "recipe A", "--out", str(tmp_path / "res" / "fet.json")])
    payload = json.loads(out.read_text())
    rows = payload["rows"]
    assert [r["model"] for r in rows] == ["cct", "cnn"]
    for r in rows:
        assert {"model", "device", "minutes", "epochs", "params", "test_acc", "val_acc", "command"} <= set(r)
        assert r["params"] > 10_000 and r["device"].startswith("cpu: ") and r["epochs"] == 1 and 0 <= r["val_acc"] <= 1 and 0 <= r["test_acc"] <= 1
        assert r["command"].startswith(f"vecset fit --config {fet.VARIANTS[r['model']]} ")
        assert "--trainer.limit_train_batches 2" in r["command"] and r["load_before"]
        assert r["tag"] == "recipe A" and r["cpus"] and "omp_num_threads" in r
    assert (out.parent / rows[0]["figure"]).stat().st_size > 0


def test_search_reads_no_test_split():
    """--subset (the search): max_train and no test pass, so the test split is not read while choosing."""
    args = fet.fit_args("/data", 5.0, 2, 10000, "cpu", False, ["--x", "1"])
    assert args[args.index("--data.init_args.max_train") + 1] == "10000"
    assert args[args.index("--trainer.limit_test_batches") + 1] == "0"
    assert args[args.index("--trainer.max_time") + 1] == "00:00:05:00" and args[-2:] == ["--x", "1"]
    assert "--trainer.limit_test_batches" not in fet.fit_args("/data", 30.0, 4, None, "cpu", False, [])


def test_epochs_for_all_or_per_variant():
    ap = fet.argparse.ArgumentParser()
    assert fet.parse_epochs(ap, None) == {} and fet.parse_epochs(ap, ["10"]) == {"*": 10}
    assert fet.parse_epochs(ap, ["cct=4", "cnn=3"]) == {"cct": 4, "cnn": 3}


def test_epochs_bad_item_names_the_option(capsys):
    with pytest.raises(SystemExit):
        fet.main(["--dry", "--epochs", "vit=3"])
    assert "--epochs vit=3: unknown variant 'vit'" in capsys.readouterr().err


def test_a_budget_figure_shows_every_run_of_that_budget_in_the_json():
    from bench.fashion_equal_time import same_budget

    def r(tag, minutes, images=54000, device="cpu"):
        return {"tag": tag, "device": device, "minutes": minutes, "train_images": images}

    previous = [r("cct", 30), r("cnn", 30), r("search", 5, 10000), r("gpu", 30, device="gpu")]
    assert [x["tag"] for x in same_budget(previous, [r("new", 30)])] == ["cct", "cnn", "new"]
    assert [x["tag"] for x in same_budget(previous, [r("s2", 5, 10000)])] == ["search", "s2"]
