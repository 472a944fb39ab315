"""Nadaraya-Watson attention pooling: the kernel formula, valid lengths, the data's splits
(the config end to end, with its report, is in tests/pipelines/reports/test_kernel_regression_reports.py)."""

import torch

from vecset.heads.kernel_regression import nadaraya_watson
from vecset.pipelines.kernel_regression.data import KernelRegressionDataModule, target_fn


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


def test_describe_names_the_point_of_every_split():
    dm = KernelRegressionDataModule(n_train=20, seed=3, grid_step=0.5)
    dm.setup("fit")
    ids = [it["id"] for split in ("train", "val", "test") for it in dm.splits[split]]
    assert len(set(ids)) == len(ids) == 20 + 10 + 10  # an id names one point
    tr, va, te = dm.splits["train"][5], dm.splits["val"][3], dm.splits["test"][7]
    assert dm.describe(tr["id"]) == f"training point 5 (x={float(dm.x_train[5]):.3f})"
    assert dm.describe(va["id"]) == "validation query x=1.750"
    assert dm.describe(te["id"]) == "test query x=3.500"
