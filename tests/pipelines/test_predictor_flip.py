"""A shipped predictor runs its model as the run's validation and test did: with the TaskModule's
``test_time_flip`` (the fashion_mnist config's), the mean of the outputs for the images and their
mirror images (``training/forward.py``'s ``forward_task``, which imports no Lightning)."""

from __future__ import annotations

import torch

import vecset


def test_the_fashion_predictor_averages_each_image_and_its_mirror_as_its_test_did():
    model = vecset.pretrained("fashion_mnist").model
    assert model.test_time_flip  # from the checkpoint's hyperparameters (configs/fashion_mnist.yaml)
    torch.manual_seed(0)
    batch = {"image": torch.rand(4, 1, 28, 28)}
    with torch.no_grad():
        flipped = model(batch)
        model.test_time_flip = False
        plain, mirror = model(batch), model({"image": batch["image"].flip(-1)})
    torch.testing.assert_close(flipped, (plain + mirror) / 2)
    assert not torch.allclose(flipped, plain)
