"""bench/fashion_examples_cnn.py: the PyTorch examples' MNIST CNN on vecset's Fashion-MNIST split."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "pipelines" / "data"))

from test_fashion_mnist import write_dataset  # noqa: E402

from bench import fashion_examples_cnn as cnn  # noqa: E402


def test_the_network_is_the_examples_one():
    net = cnn.ExamplesNet()
    # conv 1x32x3x3 + 32, conv 32x64x3x3 + 64, linear 9216x128 + 128, linear 128x10 + 10
    assert sum(p.numel() for p in net.parameters()) == 320 + 18_496 + 1_179_776 + 1_290
    assert net(torch.zeros(3, 1, 28, 28)).shape == (3, 10)


def test_dry_run_appends_a_row_with_its_command(tmp_path):
    root = write_dataset(tmp_path / "fm", n_train=200, n_test=80)
    out = tmp_path / "res.json"
    for seed, loader in ((0, "batch"), (1, "per_image")):
        cnn.main(["--dry", "--root", str(root), "--seed", str(seed), "--loader", loader, "--out", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert [(r["seed"], r["loader"]) for r in rows] == [(0, "batch"), (1, "per_image")]
    for r in rows:
        assert r["steps"] == 2 and r["epochs_completed"] == 1 and 0 <= r["val_acc"] <= 1 and 0 <= r["test_acc"] <= 1
        assert 0 <= r["val_acc_flip"] <= 1 and 0 <= r["test_acc_flip"] <= 1
        assert [c["epoch"] for c in r["val_curve"]] == [1] and r["val_curve"][0]["val_acc"] == r["val_acc"]
        assert r["params"] == 1_199_882 and r["command"].startswith("python bench/fashion_examples_cnn.py --dry")


def test_flip_accuracy_is_that_of_the_mean_softmax_of_the_image_and_its_mirror():
    torch.manual_seed(0)
    net = cnn.ExamplesNet()
    x, y = torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))
    loader = [{"image": x[:9], "y": y[:9]}, {"image": x[9:], "y": y[9:]}]
    net.eval()
    with torch.no_grad():
        plain = net(x).softmax(1)
        mean = (plain + net(torch.flip(x, dims=[3])).softmax(1)) / 2
    assert cnn.accuracy(net, loader) == (plain.argmax(1) == y).float().mean().item()
    assert cnn.accuracy(net, loader, flip=True) == (mean.argmax(1) == y).float().mean().item()
