"""bench/fashion_side_by_side.py (issue 61): each job pinned to its core with one thread, in its own
folder; dry runs on a tiny synthetic Fashion-MNIST become rows and a per-model summary; a finished
job folder is refused; a failed child is named with the end of its log."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "pipelines" / "data"))

from test_fashion_mnist import write_dataset  # noqa: E402

from bench import fashion_side_by_side as sbs  # noqa: E402

CORE = min(os.sched_getaffinity(0))  # a core this test may use: every child goes there


def test_each_job_is_pinned_to_its_core_with_one_thread(tmp_path):
    cct, env = sbs.pinned(sbs.child_command("cct", 1, 90, tmp_path, False, None), 1)
    assert cct[:3] == ["taskset", "-c", "1"] and env["OMP_NUM_THREADS"] == "1" and env["MKL_NUM_THREADS"] == "1"
    exe = sbs.vecset_exe()
    assert cct[3:3 + len(exe)] == exe and cct[3 + len(exe)] == "fit"
    flags = dict(zip(cct, cct[1:], strict=False))  # each token -> the next
    assert flags["--config"] == str(ROOT / "configs" / "fashion_mnist.yaml") and flags["--seed_everything"] == "1"
    assert flags["--trainer.max_epochs"] == "100" and flags["--model.init_args.schedule"] == "budget"
    assert flags["--trainer.max_time"] == "00:01:30:00" and "--trainer.limit_train_batches" not in cct
    cnn, env = sbs.pinned(sbs.child_command("cnn", 3, 30, tmp_path, True, "/fm"), 0)
    assert cnn[:5] == ["taskset", "-c", "0", sys.executable, str(ROOT / "bench" / "fashion_examples_cnn.py")]
    assert cnn[5:] == ["--minutes", "30", "--seed", "3", "--out", str(tmp_path / sbs.CNN_JSON), "--dry", "--root", "/fm"]
    assert env["OMP_NUM_THREADS"] == "1"
    extra = ["--trainer.callbacks+=vecset.pipelines.training.averaging.EMAWeightAveraging", "--trainer.callbacks.decay=0.999"]
    assert sbs.child_command("cct", 1, 90, tmp_path, True, None, extra)[-2:] == extra  # after the dry settings
    assert sbs.child_command("cnn", 1, 90, tmp_path, False, None, extra)[-1] == str(tmp_path / sbs.CNN_JSON)


def test_dry_cnn_two_seeds_rows_job_folders_summary_and_refusal(tmp_path, capsys):
    data = write_dataset(tmp_path / "fm", n_train=200, n_test=80)
    args = ["--dry", "--models", "cnn", "--seeds", "0", "1", "--cores", str(CORE), str(CORE), "--root", str(data),
            "--root_dir", str(tmp_path / "runs"), "--out", str(tmp_path / "res" / "sbs.json")]
    out = sbs.main(args)
    payload = json.loads(out.read_text())
    rows = payload["rows"]
    assert [r["seed"] for r in rows] == [0, 1] and {r["core"] for r in rows} == {CORE}
    dirs = [Path(r["job_dir"]) for r in rows]
    assert dirs == [tmp_path / "runs" / "side_by_side" / f"cnn_seed{s}" for s in (0, 1)]
    for r, d in zip(rows, dirs, strict=True):
        child = json.loads((d / sbs.CNN_JSON).read_text())["rows"]
        assert len(child) == 1 and child[0]["seed"] == r["seed"]
        assert child[0]["cpus"] == [CORE] and child[0]["threads"] == 1  # what the child itself saw
        assert (d / "log.txt").stat().st_size > 0 and r["command"].startswith(f"OMP_NUM_THREADS=1 taskset -c {CORE} ")
        assert r["steps"] == 2 and r["epochs"] == 1 and r["params"] == 1_199_882 and r["start_utc"].endswith("+00:00")
        assert r["test_acc"] == child[0]["test_acc"] and r["test_acc_flip"] == child[0]["test_acc_flip"]
        assert len(r["load_before"]) == 3 and r["wall_s"] > 0
    (summary,) = payload["summary"]
    accs = [r["test_acc"] for r in rows]
    assert summary["model"] == "cnn" and summary["n"] == 2
    assert summary["test_acc_mean"] == pytest.approx(sum(accs) / 2)
    assert summary["test_acc_spread"] == pytest.approx(max(accs) - min(accs))
    assert payload["machine"]["cpu_count"] == os.cpu_count() and payload["machine"]["torch"]
    assert "| cnn " in capsys.readouterr().out
    # the same jobs again: refused before anything runs, naming the finished job's folder
    with pytest.raises(SystemExit) as e:
        sbs.main(args)
    assert e.value.code == 2 and str(dirs[0]) in capsys.readouterr().err
    assert len(json.loads((dirs[0] / sbs.CNN_JSON).read_text())["rows"]) == 1  # left as it was


def test_dry_cct_beside_a_failing_child(tmp_path, monkeypatch):
    """The CCT's row comes from its run's results.json under its job folder; a child that fails is
    named with the end of its log, and the script exits non-zero after the wave, the rows kept."""
    data = write_dataset(tmp_path / "fm", n_train=200, n_test=80)
    command = sbs.child_command
    failing = [sys.executable, "-c", "import sys; print('the reason it failed'); sys.exit(3)"]
    monkeypatch.setattr(sbs, "child_command", lambda model, *a: failing if model == "cnn" else command(model, *a))
    out = tmp_path / "sbs.json"
    with pytest.raises(SystemExit) as e:
        sbs.main(["--dry", "--models", "cct", "cnn", "--seeds", "4", "--cores", str(CORE), str(CORE), "--root", str(data),
                  "--root_dir", str(tmp_path / "runs"), "--out", str(out), "--no-plot",
                  "--vecset_args", "--model.init_args.head.init_args.label_smoothing 0.2"])
    message = str(e.value.code)
    assert message.startswith(f"job cnn seed 4 (core {CORE}) failed with exit code 3")
    assert str(tmp_path / "runs" / "side_by_side" / "cnn_seed4" / "log.txt") in message and "the reason it failed" in message
    (row,) = json.loads(out.read_text())["rows"]
    jobdir = tmp_path / "runs" / "side_by_side" / "cct_seed4"
    assert row["model"] == "cct" and row["seed"] == 4 and row["run"] == str(jobdir / "runs" / "fashion_mnist" / "version_0")
    assert row["steps"] == 2 and row["epochs"] == 1 and row["params"] > 10_000 and row["precision"]
    assert 0 <= row["val_acc"] <= 1 and 0 <= row["test_acc"] <= 1 and row["val_curve"]["val_acc"]
    assert row["command"].endswith("--model.init_args.head.init_args.label_smoothing 0.2")
    assert "label_smoothing: 0.2" in (Path(row["run"]) / "config.yaml").read_text()  # --vecset_args reached the fit
    assert not out.with_suffix(".png").exists()  # --no-plot


def test_machine_facts_tell_two_epyc_generations_apart():
    """Both VMs name their CPU "AMD EPYC"; the family and model numbers of the first processor differ."""
    def cpuinfo(family: int, model: int) -> str:
        block = f"processor\t: 0\ncpu family\t: {family}\nmodel\t\t: {model}\nmodel name\t: AMD EPYC\nflags\t\t: avx2\n"
        return block + "\n" + block.replace("processor\t: 0", "processor\t: 1")

    zen4, zen5 = sbs.machine_facts(cpuinfo(25, 17)), sbs.machine_facts(cpuinfo(26, 2))
    assert (zen4["cpu"], zen4["cpu_family"], zen4["cpu_model"]) == ("AMD EPYC", 25, 17)
    assert (zen5["cpu"], zen5["cpu_family"], zen5["cpu_model"]) == ("AMD EPYC", 26, 2)
    assert sbs.machine_facts("")["cpu_family"] is None  # no /proc/cpuinfo (not Linux)
