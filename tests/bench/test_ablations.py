"""bench/ablations.py (issue #19): the plan's variants are one switch away from their base
config, a combination the code rejects becomes a row without a run, mean +- std over seeds,
resuming skips finished runs, a learned table fails with its clear error, and the
length-bucket metric (bench/length_buckets.py) on a hand case."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import ablations as ab  # noqa: E402
from bench import length_buckets as lb  # noqa: E402


@pytest.fixture(autouse=True)
def configs_in_tmp(tmp_path, monkeypatch):
    """The study writes its merged configs under runs/ of the repository; a test writes them into its own folder."""
    monkeypatch.setattr(ab, "CONFIGS", tmp_path / "configs")


# a config whose base value of every switch is given: debug speech with the Gaussian score
DEBUG = "configs/speech_frames_debug.yaml"


def tiny_job(**kw) -> ab.Job:
    switches = (ab.normalize_switch(), Switch_window())
    job = ab.Job("tiny", DEBUG, "test_acc", True, budget_s=5, max_epochs=1, seeds=(0, 1), switches=switches,
                 fixed={f"{ab.BB}.score": "gaussian"})
    return replace(job, **kw)


def Switch_window() -> ab.Switch:  # noqa: N802
    return ab.Switch("window", (f"{ab.BB}.window",), {"2": {f"{ab.BB}.window": 2}, "4": {f"{ab.BB}.window": 4}})


@pytest.mark.parametrize("name", list(ab.PLAN))
def test_every_variant_is_one_switch_away_from_its_base(name):
    job = ab.PLAN[name]
    base = ab.base_config(job)
    vs = ab.variants(job)
    assert vs[0].key == "base" and vs[0].config == base
    # the base stands for exactly one value of every switch
    assert sorted(s for s, _ in vs[0].labels) == sorted(s.name for s in job.switches)
    seen = set()
    for v in vs:
        changed = ab.changed_keys(base, v.config)
        allowed = {k for s in job.switches if s.name in {n for n, _ in v.labels} for k in s.keys}
        if v.key == "base":
            assert changed == set()
            continue
        assert len(v.labels) == 1, v.labels  # one switch, one value
        assert changed and changed <= allowed, (v.key, changed, allowed)
        seen |= set(v.labels)
    # every switch value is in the plan once: as the base or as its own run
    assert seen | set(vs[0].labels) == {(s.name, x) for s in job.switches for x in s.values}


def test_a_key_left_to_its_default_is_no_change():
    base = ab.base_config(ab.PLAN["speech_frames"])
    # the config leaves score out (Backbone's default, scaled_dot): setting it changes nothing
    assert ab.get_key(base, f"{ab.BB}.score") == "scaled_dot"
    assert ab.merged(base, {f"{ab.BB}.score": "scaled_dot"}) == base
    assert ab.changed_keys(base, ab.merged(base, {f"{ab.BB}.score": "dot"})) == {f"{ab.BB}.score"}


def test_a_value_that_changes_a_key_outside_its_switch_is_a_plan_error():
    bad = ab.Switch("window", (f"{ab.BB}.window",), {"2": {f"{ab.BB}.window": 2, f"{ab.BB}.heads": 1}})
    with pytest.raises(ValueError, match=r"switch 'window' value '2' changes .*heads.*not among its keys"):
        ab.variants(tiny_job(switches=(bad,)))


def test_a_rejected_combination_is_a_row_without_a_run(tmp_path, monkeypatch):
    # Gaussian score with relu: MultiHeadSelfAttention refuses it at construction
    def no_run(*a, **k):
        raise AssertionError("a rejected combination must not be trained")

    monkeypatch.setattr(ab, "run_fit", no_run)
    job = tiny_job()
    relu = next(v for v in ab.variants(job) if v.key == "normalize=relu")
    rec = ab.run_one(job, relu, 0, tmp_path)
    assert rec["status"] == "rejected"
    assert "score='gaussian' with normalize='relu' cannot learn" in rec["detail"]
    rows = ab.aggregate(job, [rec, {**rec, "seed": 1}])
    row = next(r for r in rows if r["value"] == "relu")
    assert row["status"].startswith("rejected: score='gaussian' with normalize='relu' cannot learn")
    assert row["seeds"] == 0 and row["test_acc_mean"] is None
    # the other values build: no reason
    assert ab.rejection(ab.seeded(job, ab.variants(job)[0].config, 0)) is None


def fake(key, labels, seed, acc, status="ok", steps=10):
    rec = {"key": key, "labels": [list(x) for x in labels], "seed": seed, "status": status}
    if status == "ok":
        rec.update({"test": {"test_acc": acc}, "steps": steps, "train_seconds": 5.0})
    else:
        rec["detail"] = "ValueError: boom\nmore"
    return rec


def test_aggregate_mean_and_sample_std_over_seeds():
    job = tiny_job(fixed={})
    base = [("normalize", "softmax"), ("window", "4")]  # debug config: window 4, softmax
    recs = [fake("base", base, s, a) for s, a in enumerate([0.80, 0.82, 0.84])]
    recs += [fake("normalize=relu", [("normalize", "relu")], s, a) for s, a in enumerate([0.5, 0.7])]
    recs += [fake("normalize=sigmoid", [("normalize", "sigmoid")], 0, None, status="error")]
    rows = {(r["switch"], r["value"]): r for r in ab.aggregate(job, recs)}
    b = rows[("normalize", "softmax")]
    assert b["base"] and b["seeds"] == 3
    assert b["test_acc_mean"] == pytest.approx(0.82) and b["test_acc_std"] == pytest.approx(0.02)
    assert rows[("window", "4")]["test_acc_mean"] == pytest.approx(0.82)  # the base run, shared
    relu = rows[("normalize", "relu")]
    assert relu["test_acc_mean"] == pytest.approx(0.6)
    assert relu["test_acc_std"] == pytest.approx(statistics.stdev([0.5, 0.7])) and not relu["base"]
    # paired with the base run of the same seed: 0.5 - 0.80, 0.7 - 0.82
    assert relu["diff_vs_base_mean"] == pytest.approx(-0.21)
    assert relu["diff_vs_base_std"] == pytest.approx(statistics.stdev([-0.30, -0.12]))
    assert b["diff_vs_base_mean"] == 0 and b["diff_vs_base_std"] == 0
    assert rows[("normalize", "sigmoid")]["status"] == "error: ValueError: boom"
    assert rows[("window", "2")]["status"] == "not run"
    assert ab.mean_std([0.3]) == (0.3, None)


def test_resume_skips_runs_whose_record_exists(tmp_path, monkeypatch):
    job = tiny_job(fixed={})
    runs_dir = tmp_path / "runs"
    vs = ab.variants(job)
    done = ab.record_path(runs_dir, job, vs[0], 0)
    done.parent.mkdir(parents=True)
    done.write_text(json.dumps(fake("base", vs[0].labels, 0, 0.9)))
    err = ab.record_path(runs_dir, job, vs[1], 1)
    err.write_text(json.dumps(fake(vs[1].key, vs[1].labels, 1, None, status="error")))
    calls = []

    def fake_run(job_, v, seed, out_dir):
        calls.append((v.key, seed))
        return fake(v.key, v.labels, seed, 0.5)

    monkeypatch.setattr(ab, "run_one", fake_run)
    assert ab.run_job(job, runs_dir, tmp_path) == len(vs) * 2 - 2
    assert (vs[0].key, 0) not in calls and (vs[1].key, 1) not in calls and (vs[0].key, 1) in calls
    calls.clear()
    assert ab.run_job(job, runs_dir, tmp_path) == 0  # all recorded now
    assert ab.run_job(job, runs_dir, tmp_path, retry_errors=True) == 1 and calls == [(vs[1].key, 1)]
    _, total, left = ab.plan_table({"tiny": job}, runs_dir)
    assert left == 0 and total == len(vs) * 2 * (job.budget_s + job.overhead_s)


def test_a_learned_table_fails_with_its_clear_error_and_is_classified_so():
    from vecset.encoders.text.encoder import TextEncoder

    enc = TextEncoder(d_model=8, positional="learned", max_len=6)
    enc.build_vocab(["abcdefghi"])
    with pytest.raises(ValueError) as e:
        enc({"text": ["abcdefghi"]})
    msg = f"ValueError: {e.value}"
    assert ab.LEARNED_TABLE_ERROR in msg and "9 positions" in msg
    job = ab.PLAN["g2p_lengths"]
    learned = (("positional", "learned"),)
    fit = {"returncode": 1, "error": msg}
    assert ab.classify(job, learned, fit) == ("failed as expected", msg)
    assert ab.classify(job, learned, {"returncode": 1, "error": "RuntimeError: other"})[0] == "error"
    assert ab.classify(job, learned, {"returncode": 0, "error": None})[0] == "unexpected: no error"
    assert ab.classify(job, (("positional", "none"),), {"returncode": 0, "error": None}) == ("ok", None)


def test_error_line_is_the_tracebacks_last_exception():
    from bench.common import error_line

    out = "Traceback (most recent call last):\n  File x\nKeyError: 'a'\nduring handling\nValueError: input has 9\n"
    assert error_line(out) == "ValueError: input has 9"
    assert error_line("all fine\n") is None


# -- length buckets ---------------------------------------------------------------------------
def test_bucket_labels():
    edges = [2, 4]
    assert [lb.bucket_label(n, edges) for n in (1, 2, 3, 4, 5, 99)] == ["<=2", "<=2", "3-4", "3-4", ">4", ">4"]
    assert lb.bucket_order(edges) == ["<=2", "3-4", ">4"]
    assert lb.group_by_bucket([5, 1, 3, 2], edges) == {"<=2": [1, 3], "3-4": [2], ">4": [0]}
    with pytest.raises(ValueError, match="increasing"):
        lb.bucket_label(1, [4, 2])


class Oracle(nn.Module):
    """A model whose logits are the batch's ``pred`` labels, one-hot, with a real LabelingHead."""

    def __init__(self) -> None:
        super().__init__()
        from vecset.heads import LabelingHead

        self.head = LabelingHead(d_model=4, num_classes=3)
        self.device = torch.device("cpu")  # as a LightningModule has

    def forward(self, batch):
        return nn.functional.one_hot(batch["pred"], 3).float()


def collate(items):
    T = max(len(it["y"]) for it in items)
    pad = lambda key, v: torch.stack([torch.cat([it[key], torch.full((T - len(it[key]),), v)]) for it in items])  # noqa: E731
    return {"y": pad("y", -100), "pred": pad("pred", 0), "ids": torch.arange(len(items))}


def test_bucket_metrics_by_hand():
    # A (2 frames): both right; B (5 frames): 2 of 5 right; C (3 frames): 0 of 3 right
    items = [{"y": torch.tensor([0, 1]), "pred": torch.tensor([0, 1])},
             {"y": torch.tensor([0, 1, 2, 0, 1]), "pred": torch.tensor([0, 1, 0, 1, 2])},
             {"y": torch.tensor([2, 2, 2]), "pred": torch.tensor([0, 0, 1])}]
    lengths = [2, 5, 3]
    out = lb.bucket_metrics(Oracle(), items, collate, lengths, [2, 4], batch_size=1)
    rows = {r["bucket"]: r for r in out["buckets"]}
    assert rows["<=2"]["acc"] == pytest.approx(1.0) and rows["<=2"]["items"] == 1
    assert rows["3-4"]["acc"] == pytest.approx(0.0)
    assert rows[">4"]["acc"] == pytest.approx(0.4) and rows[">4"]["min_length"] == 5
    # the frames of all buckets together: 4 of 10 right (micro, as the run's test_acc)
    assert out["all"] == {"items": 3, "acc": pytest.approx(0.4)}


def test_aggregate_by_length_bucket():
    job = replace(ab.PLAN["g2p_lengths"], seeds=(0, 1))
    labels = [("positional", "sinusoidal")]

    def rec(seed, short, long):
        r = fake("base", labels, seed, (short * 60 + long * 40) / 100)
        r["test"] = {"test_wer": r["test"].pop("test_acc")}
        r["lengths"] = {"buckets": [{"bucket": "<=6", "items": 60, "wer": short},
                                    {"bucket": ">12", "items": 40, "wer": long}], "all": {"items": 100}}
        return r

    rows = ab.aggregate(job, [rec(0, 0.2, 0.6), rec(1, 0.3, 0.8)])
    got = {(r["value"], r["bucket"]): r for r in rows}
    assert got[("sinusoidal", "all")]["items"] == 100 and got[("sinusoidal", "all")]["seeds"] == 2
    assert got[("sinusoidal", "<=6")]["test_wer_mean"] == pytest.approx(0.25)
    assert got[("sinusoidal", ">12")]["test_wer_mean"] == pytest.approx(0.7)
    assert got[("sinusoidal", ">12")]["test_wer_std"] == pytest.approx(statistics.stdev([0.6, 0.8]))
    assert got[("learned", "all")]["status"] == "not run"
    # every row has the same columns, in the same order (one table)
    assert len({tuple(r) for r in rows}) == 1


def test_epochs_are_measured_once_in_the_budget(tmp_path, monkeypatch):
    calls = []

    def fake_fit(config, args=None, env=None, log=None):
        calls.append(ab.yaml.safe_load((ab.ROOT / config).read_text()))
        run = tmp_path / "run"
        run.mkdir(exist_ok=True)
        (run / "results.json").write_text(json.dumps({"epochs": 4, "global_steps": 40, "wall_seconds": 29.0}))
        return {"returncode": 0, "run_dir": run, "error": None}

    monkeypatch.setattr(ab, "run_fit", fake_fit)
    job = tiny_job(max_epochs=None, budget_s=30)
    sized = ab.size_epochs(job, tmp_path / "runs")
    assert sized.max_epochs == 4 and len(calls) == 1
    # the base config, with the budget as max_time and epochs left open
    assert calls[0]["model"] == ab.base_config(job)["model"]
    assert calls[0]["trainer"]["max_time"] == "00:00:00:30" and calls[0]["trainer"]["max_epochs"] == 100000
    assert ab.base_config(sized)["trainer"]["max_epochs"] == 4
    assert ab.size_epochs(job, tmp_path / "runs").max_epochs == 4 and len(calls) == 1  # read back
    assert ab.size_epochs(tiny_job(max_epochs=7), tmp_path / "other").max_epochs == 7  # given in the plan


def test_the_measured_epochs_file_is_not_read_as_a_run(tmp_path, monkeypatch):
    # the full study crashed here once: write_job read epochs.json among the run records
    monkeypatch.setattr(ab, "machine", lambda: {})
    monkeypatch.setattr(ab, "figure", lambda job, rows, path: ab.ROOT / "tiny.png")  # figures: tested apart
    job = tiny_job(max_epochs=None, budget_s=30)
    runs_dir = tmp_path / "runs"

    def fake_fit(config, args=None, env=None, log=None):
        run = tmp_path / "run"
        run.mkdir(exist_ok=True)
        (run / "results.json").write_text(json.dumps({"epochs": 4, "global_steps": 40, "wall_seconds": 29.0}))
        return {"returncode": 0, "run_dir": run, "error": None}

    monkeypatch.setattr(ab, "run_fit", fake_fit)
    job = ab.size_epochs(job, runs_dir)
    assert (runs_dir / job.name / "epochs.json").exists()
    v = ab.variants(job)[0]
    ab.record_path(runs_dir, job, v, 0).write_text(json.dumps(fake("base", v.labels, 0, 0.9)))
    monkeypatch.setattr(ab.sys, "argv", ["bench/ablations.py", "--report"])
    payload = json.loads(ab.write_job(job, runs_dir, tmp_path / "out", quick=False).read_text())
    assert payload["job"] == "tiny" and payload["command"] == "python bench/ablations.py"
    assert [r["key"] for r in payload["runs"]] == ["base"]
    assert next(r for r in payload["rows"] if r["base"])["test_acc_mean"] == pytest.approx(0.9)


# -- the committed records (issue #27) --------------------------------------------------------
def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def test_the_run_records_are_not_ignored_by_git():
    """The top-level ``runs/`` (every ``vecset fit``'s run directories) is ignored; the study's
    records under ``bench/results/ablations/runs/`` are committed (a pattern ``runs/`` matched
    both, and ``--plan`` on a fresh clone showed every run still to do)."""
    if shutil.which("git") is None or git("rev-parse", "--git-dir").returncode:
        pytest.skip("not a git checkout")
    record = "bench/results/ablations/runs/freesolv/base_s0.json"
    assert git("check-ignore", "-q", "--no-index", record).returncode == 1, git("check-ignore", "-v", "--no-index", record).stdout
    assert git("check-ignore", "-q", "--no-index", "runs/freesolv/version_0/results.json").returncode == 0
    assert git("check-ignore", "-q", "--no-index", "bench/results/ablations/logs/x.log").returncode == 0


STUDY = ab.RESULTS / "ablations"


@pytest.mark.parametrize("name", list(ab.PLAN))
def test_the_committed_records_give_the_committed_rows(name):
    """``--report`` from the committed records rebuilds the committed rows, and ``--plan`` sees
    every run done. The records were recovered from the job JSONs (``--recover-records``); a
    length job's per-length rows were never kept there, so its recovered records give only the
    ``all`` rows (without their item count), and ``--report`` keeps the rest from the JSON."""
    committed = json.loads((STUDY / f"{name}.json").read_text())
    runs_dir = STUDY / "runs"
    assert (runs_dir / name / "epochs.json").exists()  # else size_epochs below would train
    job = ab.size_epochs(ab.PLAN[name], runs_dir)
    assert job.max_epochs == committed["max_epochs"]
    records = [json.loads(p.read_text()) for p in sorted((runs_dir / name).glob("*.json")) if p.name != "epochs.json"]
    assert [{k: r.get(k) for k in ab.RUN_FIELDS} for r in records] == committed["runs"]
    rows = ab.aggregate(job, records)
    if job.lengths is None:
        assert rows == committed["rows"]
    else:
        assert rows == [{**r, "items": None} for r in committed["rows"] if r["bucket"] == "all"]
        kept, notes = ab.keep_length_rows(job, rows, records, committed["rows"])
        assert kept == committed["rows"]
        assert len(notes) == sum(r["bucket"] == "all" and r["seeds"] > 0 for r in committed["rows"])
    _, total, left = ab.plan_table({name: job}, runs_dir)
    assert left == 0 and total > 0


def test_recovering_gives_the_committed_records_and_keeps_existing_ones(tmp_path):
    job = ab.PLAN["freesolv"]
    written = ab.recover_records(job, STUDY / "freesolv.json", tmp_path)
    committed = sorted((STUDY / "runs" / "freesolv").glob("*.json"))
    assert sorted(p.name for p in written) == [p.name for p in committed]
    for p in committed:
        assert (tmp_path / "freesolv" / p.name).read_text() == p.read_text(), p.name
    rec = json.loads((tmp_path / "freesolv" / "base_s0.json").read_text())
    assert rec["recovered_from"] == "bench/results/ablations/freesolv.json"
    assert rec["not_recovered"] == ["config", "cpu_seconds", "best_val", "epochs"] and "best_val" not in rec
    assert rec["labels"] == [list(x) for x in ab.variants(job)[0].labels]
    assert ab.recover_records(job, STUDY / "freesolv.json", tmp_path) == []  # nothing left to write
    # a length job's records say that their buckets are lost
    ab.recover_records(ab.PLAN["g2p_lengths"], STUDY / "g2p_lengths.json", tmp_path)
    assert "lengths" in json.loads((tmp_path / "g2p_lengths" / "base_s0.json").read_text())["not_recovered"]


def test_a_record_the_plan_does_not_know_is_a_clear_error(tmp_path):
    payload = json.loads((STUDY / "freesolv.json").read_text())
    payload["runs"][0]["key"] = "score=cosine"
    (tmp_path / "freesolv.json").write_text(json.dumps(payload))
    with pytest.raises(ValueError, match=r"freesolv.json: run 'score=cosine' is not a variant of the plan's job 'freesolv'"):
        ab.recover_records(ab.PLAN["freesolv"], tmp_path / "freesolv.json", tmp_path / "runs")
