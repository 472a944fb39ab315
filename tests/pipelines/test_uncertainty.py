"""Regression uncertainty: the mean-variance head, the uncertainty scores, ensembles (toy and a
tiny two-member FreeSolv run), and the class weights and binary scores of classification."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.stats import norm
from sklearn.metrics import average_precision_score, roc_auc_score
from sklearn.utils.class_weight import compute_class_weight

from vecset.contracts.data_spec import DataSpec
from vecset.heads import SequenceHead
from vecset.pipelines.ensemble import combine
from vecset.pipelines.reports.binary import binary_scores
from vecset.pipelines.reports.uncertainty import (
    gaussian_nll,
    miscalibration_area,
    uncertainty_scores,
)

ROOT = Path(__file__).resolve().parents[2]


def test_mean_variance_head_gives_mean_and_std_in_target_units():
    head = SequenceHead(8, 2, task="regression", regression_loss="gaussian_nll")
    y = torch.tensor([[10.0, -1.0], [14.0, -3.0], [12.0, -2.0]])  # mean (12, -2), population std (1.633, 0.8165)
    head.fit_scaler(y)
    s = torch.tensor([np.sqrt(8 / 3), np.sqrt(2 / 3)], dtype=torch.float32)
    out = torch.tensor([[0.5, -1.0, 0.3, 2.0]])  # standardized means, then raw variances
    mean, std = head.mean_std(out)
    assert torch.allclose(mean, torch.tensor([[12 + 0.5 * s[0], -2 - 1.0 * s[1]]]), atol=1e-5)
    var_z = F.softplus(torch.tensor([0.3, 2.0])) + 1e-6
    assert torch.allclose(std, (var_z.sqrt() * s)[None], atol=1e-5)
    pred = head.predict(out, {})
    assert np.allclose(pred["std"], std.tolist()) and np.allclose(pred["value"], mean.tolist())
    # the loss is torch's Gaussian NLL on standardized targets
    batch = {"y": torch.tensor([[13.0, -2.5]])}
    z = (batch["y"] - torch.tensor([12.0, -2.0])) / s
    ref = torch.nn.GaussianNLLLoss(full=True, eps=1e-6)(out[:, :2], z, var_z[None])
    assert torch.allclose(head.loss(out, batch), ref)
    assert head.mlp[-1].out_features == 4  # a mean and a variance per target


def test_mse_head_has_no_std_and_one_output_per_target():
    head = SequenceHead(8, 1, task="regression")
    assert head.mlp[-1].out_features == 1 and head.mean_std(torch.zeros(2, 1))[1] is None
    assert "std" not in head.predict(torch.zeros(2, 1), {})


def test_balanced_class_weights_come_from_the_training_labels():
    head = SequenceHead(8, 2, class_weights="balanced")
    labels = torch.tensor([0, 0, 0, 1, 0, 1, 0, 0])
    took = head.receive(DataSpec(fit=True, class_names=["BBB-", "BBB+"], train_targets=labels))
    ref = compute_class_weight("balanced", classes=np.array([0, 1]), y=labels.numpy())
    assert np.allclose(head.class_weight.numpy(), ref) and np.allclose(ref, [8 / 12, 2.0])
    assert "class weights" in took
    out, batch = torch.randn(8, 2), {"y": labels}
    assert torch.allclose(head.loss(out, batch), F.cross_entropy(out, labels, weight=torch.tensor(ref).float()))
    assert not torch.allclose(head.loss(out, batch), F.cross_entropy(out, labels))
    # kept in the checkpoint; an unweighted head's keys stay as before
    assert "class_weight" in head.state_dict() and "class_weight" not in SequenceHead(8, 2).state_dict()
    with pytest.raises(ValueError, match=r"class 1 has no training labels"):
        head.fit_class_weights(torch.zeros(5, dtype=torch.long))


def test_a_class_without_training_labels_is_named_as_declared_with_its_file():
    head = SequenceHead(8, 2, class_weights="balanced")
    spec = DataSpec(source="MoleculeDataModule", origin="data/b.csv", fit=True, class_names=["BBB-", "BBB+"],
                    train_targets=torch.ones(7, dtype=torch.long))
    with pytest.raises(ValueError, match=r"class_weights='balanced': class 'BBB-' \(index 0\) has no training labels "
                                         r"in data/b\.csv \(MoleculeDataModule's training split: 7 labels, all "
                                         r"'BBB\+'\)"):
        head.receive(spec)


def test_ensemble_std_is_the_spread_of_the_members():
    rng = np.random.default_rng(0)
    means = rng.normal(size=(5, 7, 2))
    mean, std = combine(means, None)
    assert np.allclose(mean, means.mean(0)) and np.allclose(std, means.std(0, ddof=0))
    variances = rng.uniform(0.1, 1.0, size=(5, 7, 2))
    mean2, std2 = combine(means, variances)
    # the mixture of the members' Gaussians: E[var] + Var[mean]
    mixture = (variances + means**2).mean(0) - means.mean(0) ** 2
    assert np.allclose(mean2, mean) and np.allclose(std2**2, mixture)


def test_calibrated_gaussian_has_miscalibration_area_near_zero():
    rng = np.random.default_rng(0)
    mean = rng.normal(size=20000)
    std = rng.uniform(0.5, 2.0, size=20000)
    true = mean + std * rng.normal(size=20000)
    assert miscalibration_area(mean, std, true) < 0.01
    assert miscalibration_area(mean, std / 3, true) > 0.2  # overconfident
    assert miscalibration_area(mean, std * 3, true) > 0.2  # underconfident
    scores = uncertainty_scores(mean, std, true)
    assert scores["spearman_abs_error_std"] > 0.2  # a larger std goes with a larger error here
    assert uncertainty_scores(mean, np.abs(true - mean) + 1e-9, true)["spearman_abs_error_std"] == pytest.approx(1.0)


def test_nll_is_torchs_and_the_gaussian_log_density():
    rng = np.random.default_rng(1)
    mean, std, true = rng.normal(size=50), rng.uniform(0.2, 3, size=50), rng.normal(size=50)
    ref = -norm.logpdf(true, mean, std).mean()
    assert gaussian_nll(mean, std, true) == pytest.approx(ref, rel=1e-9)
    t = lambda a: torch.tensor(a)  # noqa: E731
    assert gaussian_nll(mean, std, true) == pytest.approx(
        float(torch.nn.GaussianNLLLoss(full=True, eps=0.0)(t(mean), t(true), t(std**2))), rel=1e-9)


def test_binary_scores_are_sklearns():
    rng = np.random.default_rng(0)
    label = rng.integers(0, 2, size=200)
    prob = np.clip(0.3 * label + rng.uniform(0, 0.7, size=200), 0, 1)
    s = binary_scores(torch.tensor(prob, dtype=torch.float32), torch.tensor(label))
    assert s["roc_auc"] == pytest.approx(roc_auc_score(label, prob), abs=1e-5)
    assert s["pr_auc"] == pytest.approx(average_precision_score(label, prob), abs=1e-5)
    assert s["accuracy"] == pytest.approx(np.mean((prob >= 0.5) == label))
    assert s["positives"] == label.sum()


def test_binary_scores_of_one_class_are_undefined_not_zero():
    prob = torch.tensor([0.2, 0.7, 0.9])
    s = binary_scores(prob, torch.ones(3, dtype=torch.long), ["BBB-", "BBB+"])
    assert s["roc_auc"] is None and s["pr_auc"] == pytest.approx(1.0)
    assert s["roc_auc_undefined"] == "the labels hold one class only ('BBB+', 3 of 3): ROC-AUC needs both"
    s = binary_scores(prob, torch.zeros(3, dtype=torch.long), ["BBB-", "BBB+"])
    assert s["roc_auc"] is None and s["pr_auc"] is None
    assert s["pr_auc_undefined"] == "no positive ('BBB+') among the 3 labels: PR-AUC needs one"
    assert "roc_auc_undefined" not in binary_scores(prob, torch.tensor([0, 1, 1]))


def b3db_positives(tmp_path: Path, step: int = 50) -> Path:
    """Every ``step``-th BBB+ row of data/molecules/b3db.csv: a file of one class."""
    with open(ROOT / "data" / "molecules" / "b3db.csv") as f:
        lines = f.readlines()
    path = tmp_path / "pos.csv"
    path.write_text("".join([lines[0], *[ln for ln in lines[1:] if ",BBB+," in ln][::step]]))
    return path


def test_one_class_test_labels_write_null_roc_auc_with_the_reason(tmp_path, monkeypatch, capsys):
    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "pos.yaml"
    cfg.write_text(tiny(outputs=2, head="task: classification", csv=b3db_positives(tmp_path, 60),
                               data="label_column: label, classes: [BBB-, BBB+]"))
    run_cli(["fit", "--config", str(cfg), "--trainer.max_epochs=1"])
    text = (tmp_path / "runs" / "pos" / "version_0" / "test_binary.json").read_text()
    binary = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in test_binary.json"))
    assert binary["roc_auc"] is None and binary["class_balance"]["test"]["BBB-"] == 0
    assert binary["roc_auc_undefined"].startswith("the labels hold one class only ('BBB+'")
    assert "test ROC-AUC undefined: the labels hold one class only ('BBB+'" in capsys.readouterr().out


def test_balanced_class_weights_on_a_one_class_file_name_the_class_and_the_file(tmp_path, monkeypatch, capsys):
    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "pos.yaml"
    csv_path = b3db_positives(tmp_path, 100)
    cfg.write_text(tiny(outputs=2, head="task: classification, class_weights: balanced", csv=csv_path,
                               data="label_column: label, classes: [BBB-, BBB+]"))
    with pytest.raises(SystemExit) as e:  # one line, exit 2
        run_cli(["fit", "--config", str(cfg), "--trainer.max_epochs=1"])
    assert e.value.code == 2
    assert re.search(rf"class 'BBB-' \(index 0\) has no training labels in {csv_path}", capsys.readouterr().err)


TINY = """
seed_everything: 0
trainer: {{max_epochs: 2, accelerator: cpu, devices: 1, log_every_n_steps: 1, enable_model_summary: false,
          enable_progress_bar: false,
          callbacks: [{{class_path: vecset.pipelines.reports.callback.ReportWriter, init_args: {{reports: [{reports}]}}}}]}}
model:
  class_path: vecset.pipelines.TaskModule
  init_args:
    encoder: {{class_path: vecset.encoders.GraphEncoder, init_args: {{d_model: 16, node_dim: 42, attention: all_pairs, heads: 2}}}}
    backbone: {{class_path: vecset.backbone.Backbone, init_args: {{d_model: 16, depth: 1, heads: 2, mlp_ratio: 2.0}}}}
    head: {{class_path: vecset.heads.SequenceHead, init_args: {{d_model: 16, num_outputs: {outputs}, pooling: attention, {head}}}}}
    lr: 0.003
data:
  class_path: vecset.pipelines.MoleculeDataModule
  init_args: {{csv_path: {csv}, batch_size: 32, {data}}}
"""


# The molecule data module's default reports, with one molecule drawn in pool_attention.png, not
# six: its drawing was most of a tiny run's time
REPORTS = {"classification": ["vecset.pipelines.reports.classification.ClassificationReport",
                              "vecset.pipelines.reports.binary.BinaryReport"],
           "regression": ["vecset.pipelines.reports.regression.ParityReport",
                          "vecset.pipelines.reports.uncertainty.UncertaintyReport"]}
POOL_ATTENTION = "{class_path: vecset.pipelines.molecules.reports.PoolingAttentionReport, init_args: {molecules: 1}}"


def tiny(outputs: int, head: str, csv: Path, data: str) -> str:
    """TINY for a classification or regression head, with the reports above."""
    task = "classification" if "task: classification" in head else "regression"
    reports = ", ".join([*(f"{{class_path: {c}}}" for c in REPORTS[task]), POOL_ATTENTION])
    return TINY.format(outputs=outputs, head=head, csv=csv, data=data, reports=reports)


def test_two_member_ensemble_of_mean_variance_heads(tmp_path, monkeypatch):
    import vecset.encoders.graph.reading as reading
    from vecset.pipelines.ensemble import main

    monkeypatch.chdir(tmp_path)
    featurized, real = [], reading.MoleculeFeaturizer.__call__
    monkeypatch.setattr(reading.MoleculeFeaturizer, "__call__", lambda self, s: featurized.append(s) or real(self, s))
    with open(ROOT / "data" / "molecules" / "freesolv.csv") as f:
        (tmp_path / "fs.csv").write_text("".join(f.readlines()[:81]))
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(tiny(outputs=1, head="task: regression, regression_loss: gaussian_nll",
                               csv=tmp_path / "fs.csv", data="target_columns: [expt]"))
    out = main(["--members", "2", "--config", str(cfg)])
    summary = json.loads((out / "ensemble.json").read_text())
    assert [r["seed"] for r in summary["runs"]] == [0, 1]
    assert len(featurized) == 80  # the 80 molecules once: the second member read the feature cache
    members = [json.loads((Path(r["run_dir"]) / "results.json").read_text()) for r in summary["runs"]]
    # each member's own run wrote its uncertainty report (a mean-variance head gives a std)
    assert all((Path(r["run_dir"]) / "test_uncertainty.json").exists() for r in summary["runs"])
    with open(out / "predictions.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8  # the test part of 80 molecules
    m = np.array([[float(r["member0_expt"]), float(r["member1_expt"])] for r in rows])
    y = np.array([float(r["measured"]) for r in rows])
    for k in range(2):  # members' columns are their checkpoints' test predictions
        assert np.sqrt(np.mean((m[:, k] - y) ** 2)) == pytest.approx(members[k]["test"]["test_rmse"], rel=1e-4)
    assert np.allclose([float(r["expt"]) for r in rows], m.mean(1), atol=1e-5)
    # mean-variance members: the std is above the members' spread alone
    std = np.array([float(r["expt_std"]) for r in rows])
    assert np.all(std > m.std(1)) and summary["uncertainty"]["count"] == 8


def test_a_failed_member_is_named_and_a_rerun_continues_from_the_finished_ones(tmp_path, monkeypatch, capsys):
    """Member 1 of 2 crashes: the error names it and the finished member 0; the same command
    again trains member 1 only and combines both. No member prints Lightning's warning about
    ``args`` beside command-line arguments (the ensemble's own command line)."""
    import sys
    import warnings

    from vecset.pipelines import ensemble

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["ensemble.py", "--members", "2", "--config", "tiny.yaml"])
    with open(ROOT / "data" / "molecules" / "freesolv.csv") as f:
        (tmp_path / "fs.csv").write_text("".join(f.readlines()[:81]))
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(tiny(outputs=1, head="task: regression", csv=tmp_path / "fs.csv", data="target_columns: [expt]"))
    args = ["--members", "2", "--config", str(cfg), "--trainer.max_epochs=1"]
    real, fits, crash = ensemble.run_cli, [], [True]

    def crashing(argv, run=True):
        fits.append(argv[argv.index("--seed_everything") + 1] if run else "data")
        if run and argv[-1] == "1" and crash and crash.pop():
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return real(argv, run=run)

    monkeypatch.setattr(ensemble, "run_cli", crashing)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match=r"ensemble member 1 of 2 \(seed 1\) failed: RuntimeError: CUDA error: "
                                               r"an illegal memory access was encountered\. The finished members "
                                               r"\(seed: run\) are kept: 0: runs/tiny/version_0; run the same "
                                               r"command again to continue from them") as e:
            ensemble.main(args)
    assert "illegal memory access" in str(e.value.__cause__)  # the member's own error and traceback
    assert not [w for w in caught if "args parameter is intended" in str(w.message)]
    assert "args parameter is intended" not in capsys.readouterr().err
    out = ensemble.main(args)  # the same command again
    assert fits == ["0", "1", "1"]  # member 0 was not trained again
    assert "ensemble member 0 (seed 0): finished by an earlier run, runs/tiny/version_0: not trained again" \
        in capsys.readouterr().out
    summary = json.loads((out / "ensemble.json").read_text())
    assert [(r["seed"], r["run_dir"]) for r in summary["runs"]] == [(0, "runs/tiny/version_0"),
                                                                    (1, "runs/tiny/version_1")]
    assert not (tmp_path / "runs" / "tiny_ensemble" / "unfinished_members.json").exists()
    # combined: the command again trains a new ensemble; with every member finished before, the data
    # module comes from the config alone
    monkeypatch.setattr(ensemble, "run_cli", lambda argv, run=True: fits.append("x") or real(argv, run=run))
    (tmp_path / "runs" / "tiny_ensemble").mkdir(exist_ok=True)
    ensemble.record_member(tmp_path / "runs" / "tiny_ensemble", args[2:], 0, "runs/tiny/version_0")
    ensemble.record_member(tmp_path / "runs" / "tiny_ensemble", args[2:], 1, "runs/tiny/version_1")
    again = ensemble.main(args)
    assert fits[3:] == ["x"] and json.loads((again / "ensemble.json").read_text())["test_rmse"] == summary["test_rmse"]


def test_one_mse_member_gives_no_uncertainty_and_says_why(tmp_path, monkeypatch, capsys):
    """One member with an MSE head has no spread: its std would be 0 everywhere (NLL NaN, a
    miscalibration area of nothing). The ensemble writes its predictions without a std, and
    null uncertainty with the reason; ensemble.json is valid JSON."""
    from vecset.pipelines.ensemble import main

    monkeypatch.chdir(tmp_path)
    with open(ROOT / "data" / "molecules" / "freesolv.csv") as f:
        (tmp_path / "fs.csv").write_text("".join(f.readlines()[:81]))
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(tiny(outputs=1, head="task: regression", csv=tmp_path / "fs.csv", data="target_columns: [expt]"))
    out = main(["--members", "1", "--config", str(cfg), "--trainer.max_epochs=1"])
    summary = json.loads((out / "ensemble.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert summary["uncertainty"] is None
    assert summary["uncertainty_undefined"] == ("one member with an MSE head (regression_loss mse) gives no spread: "
                                                "an uncertainty needs 2 or more members or a mean-variance head "
                                                "(regression_loss gaussian_nll)")
    assert not (out / "test_uncertainty.json").exists() and not (out / "calibration.png").exists()
    with open(out / "predictions.csv") as f:
        header = next(csv.reader(f))
    assert "expt" in header and "expt_std" not in header and "member0_expt" in header
    assert f"uncertainty undefined: {summary['uncertainty_undefined']}" in capsys.readouterr().out


def test_a_zero_std_is_refused_and_a_constant_std_has_no_rank_correlation(tmp_path):
    from vecset.pipelines.reports.uncertainty import write_uncertainty

    mean, true = np.array([[1.0], [2.0], [3.0]]), np.array([[1.5], [2.0], [2.0]])
    with pytest.raises(ValueError, match=r"std must be positive and finite: 3 of 3 predictions of 'expt' have std 0"):
        write_uncertainty(mean, np.zeros((3, 1)), true, ["expt"], tmp_path)
    scores = uncertainty_scores(mean[:, 0], np.full(3, 0.5), true[:, 0])
    assert scores["spearman_abs_error_std"] is None
    assert scores["spearman_undefined"] == "the std is the same for every prediction"
    write_uncertainty(mean, np.full((3, 1), 0.5), true, ["expt"], tmp_path)
    json.loads((tmp_path / "test_uncertainty.json").read_text(), parse_constant=lambda c: pytest.fail(c))


def test_tiny_classification_run_reports_roc_auc(tmp_path, monkeypatch):
    from vecset.pipelines.cli import run_cli

    monkeypatch.chdir(tmp_path)
    with open(ROOT / "data" / "molecules" / "b3db.csv") as f:
        lines = f.readlines()
    (tmp_path / "b.csv").write_text("".join([lines[0], *lines[1::65]]))  # 121 of both classes (the file is sorted)
    cfg = tmp_path / "bbb.yaml"
    cfg.write_text(tiny(outputs=2, head="task: classification, class_weights: balanced", csv=tmp_path / "b.csv",
                               data="label_column: label, classes: [BBB-, BBB+], split: {method: scaffold_random}"))
    run_cli(["fit", "--config", str(cfg)])
    run_dir = tmp_path / "runs" / "bbb" / "version_0"
    res = json.loads((run_dir / "results.json").read_text())
    binary = json.loads((run_dir / "test_binary.json").read_text())
    assert binary["accuracy"] == pytest.approx(res["test"]["test_acc"], abs=1e-6)
    assert binary["count"] == sum(binary["class_balance"]["test"].values())
    assert 0.0 <= binary["roc_auc"] <= 1.0 and (run_dir / "roc_pr.png").stat().st_size > 1000


def test_two_member_ensemble_of_classifiers_averages_their_probabilities(tmp_path, monkeypatch):
    from vecset.pipelines.ensemble import main

    monkeypatch.chdir(tmp_path)
    with open(ROOT / "data" / "molecules" / "b3db.csv") as f:
        lines = f.readlines()
    (tmp_path / "b.csv").write_text("".join([lines[0], *lines[1::65]]))
    cfg = tmp_path / "bbb.yaml"
    cfg.write_text(tiny(outputs=2, head="task: classification, class_weights: balanced", csv=tmp_path / "b.csv",
                               data="label_column: label, classes: [BBB-, BBB+], split: {method: scaffold_random}"))
    out = main(["--members", "2", "--config", str(cfg)])
    summary = json.loads((out / "ensemble.json").read_text())
    members = [json.loads((Path(r["run_dir"]) / "results.json").read_text()) for r in summary["runs"]]
    with open(out / "predictions.csv") as f:
        rows = list(csv.DictReader(f))
    p = np.array([[float(r["member0_P(BBB+)"]), float(r["member1_P(BBB+)"])] for r in rows])
    y = np.array([r["measured"] == "BBB+" for r in rows])
    for k in range(2):  # members' columns are their checkpoints' test probabilities
        assert np.mean((p[:, k] >= 0.5) == y) == pytest.approx(members[k]["test"]["test_acc"], abs=1e-6)
        assert summary["test"]["members"][k]["roc_auc"] == pytest.approx(roc_auc_score(y, p[:, k]), abs=1e-5)
    mean = p.mean(1)
    assert np.allclose([float(r["P(BBB+)"]) for r in rows], mean, atol=2e-6)
    assert [r["prediction"] for r in rows] == ["BBB+" if m > 0.5 else "BBB-" for m in mean]
    binary = json.loads((out / "test_binary.json").read_text())
    assert binary["roc_auc"] == pytest.approx(roc_auc_score(y, mean), abs=1e-4)
    assert binary["count"] == len(rows) == sum(binary["class_balance"]["test"].values())
    assert set(summary["val"]["ensemble"]) >= {"roc_auc", "pr_auc", "accuracy"}
    assert (out / "roc_pr.png").stat().st_size > 1000
