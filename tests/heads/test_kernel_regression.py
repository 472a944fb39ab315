"""Nadaraya-Watson attention pooling: the kernel formula, valid lengths, and the config end
to end (a learned width beats the nonparametric w = 1; fits and heatmap plots written)."""

import json
from pathlib import Path

import torch

from vecset.heads.kernel_regression import nadaraya_watson
from vecset.pipelines.cli import run_cli
from vecset.pipelines.data.kernel_regression import KernelRegressionDataModule, target_fn

ROOT = Path(__file__).resolve().parents[2]


def test_nadaraya_watson_matches_the_kernel_formula():
    torch.manual_seed(0)
    q, k, v = torch.rand(2, 3) * 5, torch.rand(2, 6) * 5, torch.randn(2, 6)
    pred, w = nadaraya_watson(q, k, v, torch.tensor([4, 6]), width=2.0)
    kern = torch.exp(-((q[0, 1] - k[0, :4]) * 2.0) ** 2 / 2)
    torch.testing.assert_close(pred[0, 1], (kern * v[0, :4]).sum() / kern.sum())
    assert torch.all(w[0, :, 4:] == 0)  # keys past the valid length: exactly zero weight
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3))


def test_data_is_seeded_leave_one_out():
    dm = KernelRegressionDataModule(n_train=20, seed=3)
    dm.setup("fit")
    it = dm.splits["train"][5]
    assert it["keys"].shape == (19,) and not torch.any(it["keys"] == it["query"])
    torch.testing.assert_close(dm.splits["test"][7]["y"], target_fn(dm.grid[7]))
    dm2 = KernelRegressionDataModule(n_train=20, seed=3)
    dm2.setup("fit")
    assert torch.equal(dm.x_train, dm2.x_train)


def test_config_learns_a_width_that_beats_the_nonparametric_fit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_cli(["fit", "--config", str(ROOT / "configs" / "kernel_regression.yaml"), "--trainer.max_epochs=40",
             "--trainer.enable_progress_bar=false"])
    run = tmp_path / "runs" / "kernel_regression" / "version_0"
    kr = json.loads((run / "kernel_regression.json").read_text())
    rmse = kr["test_rmse"]
    learned = next(v for k, v in rmse.items() if k.startswith("learned"))
    assert kr["width"] > 1.5 and learned < rmse["nonparametric (w=1)"]
    assert (run / "fits.png").exists() and (run / "attention.png").exists()
