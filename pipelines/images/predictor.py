"""The image predictor: grey images -> their class (``vecset.pretrained("digits")``,
``vecset.pretrained("fashion_mnist")``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from vecset.pipelines.predictor import Predictor


class ImagePredictor(Predictor):
    """Grey images -> the class and its probability (digits: 8x8, Fashion-MNIST: 28x28). An
    input is an array of the model's size (H x W or 1 x H x W) in its data set's raw range
    (``raw_range``: scikit-learn's ``load_digits`` 0..16, Fashion-MNIST's bytes 0..255), or an
    image file, read grey, resized to H x W (antialiased bilinear) and scaled to that range.
    Both data sets are bright on dark (digits: ink high, background 0; Fashion-MNIST: light
    clothes on a black background): invert a dark drawing or photo on white first.

    ``extra``: ``classes``, ``raw_range``, ``scale`` (the model's input is raw * scale + shift),
    ``size`` (H, W; 8x8 when absent: the digits bundle predates it) and ``dataset`` (the name
    the range error gives)."""

    input_column, input_flag = "image", "--images"
    values = ["prediction", "probability"]

    def __init__(self, name: str, path: Path, bundle: dict, card: dict) -> None:
        super().__init__(name, path, bundle, card)
        self.classes: list[str] = self.extra["classes"]
        self.size: tuple[int, int] = tuple(self.extra.get("size", (8, 8)))
        self.dataset: str = self.extra.get("dataset", "load_digits")

    def describe(self, value: Any) -> str:
        if isinstance(value, str | Path):
            return str(value)
        return f"array{list(np.shape(value))}"

    def prepare(self, value: Any) -> torch.Tensor:
        low, high = self.extra["raw_range"]
        h, w = self.size
        if isinstance(value, str | Path):
            from vecset.encoders.image.reading import read_image

            if not Path(value).is_file():
                raise ValueError(f"{value}: no such image file")
            try:
                img = read_image(Path(value), 1)
            except (OSError, ValueError) as e:
                raise ValueError(f"{value}: {str(e).splitlines()[0]}") from None
            img = img.float() / (255.0 if img.dtype == torch.uint8 else 1.0)  # (1, H', W') in [0, 1]
            # torchvision's v2.Resize(antialias=True) on a float image, without importing torchvision
            x = torch.nn.functional.interpolate(img[None], size=[h, w], mode="bilinear", align_corners=False,
                                                antialias=True)[0] * high
        else:
            x = torch.as_tensor(np.asarray(value, dtype=np.float64)).float()
            if x.shape not in ((h, w), (1, h, w)):
                raise ValueError(f"expected an image of shape [{h}, {w}] (or [1, {h}, {w}]), got shape {list(x.shape)}")
            if not torch.isfinite(x).all() or x.min() < low or x.max() > high:
                raise ValueError(f"pixel values must be finite and within {low}..{high} (the range of {self.dataset}), "
                                 f"got {float(x.min()):g}..{float(x.max()):g}")
        scale, shift = self.extra["scale"]
        return (x.reshape(1, h, w) * scale + shift).float()

    def run(self, items: list[torch.Tensor]) -> list[dict]:
        prob = self.model({"image": torch.stack(items)}).float().softmax(-1)
        p, k = prob.max(-1)
        return [{"prediction": self.classes[i], "probability": v} for i, v in zip(k.tolist(), p.tolist(), strict=True)]

    @classmethod
    def pack_extra(cls, config: dict) -> tuple[dict, dict]:
        """The pixel scaling and classes of the run's data (digits or Fashion-MNIST) and its
        test images as arrays in the raw range, by index."""
        data = config["data"]
        if data["class_path"].endswith("FashionMNISTDataModule"):
            return fashion_extra(data.get("init_args") or {})
        if data["class_path"].endswith("DigitsDataModule"):
            return digits_extra()
        raise ValueError(f"data.class_path: {data['class_path']}: the image predictor reads digits and Fashion-MNIST "
                         "models (their raw pixel range is known)")


def digits_extra() -> tuple[dict, dict]:
    from sklearn.datasets import load_digits

    from vecset.pipelines.images.digits import DigitsDataModule, digits_split

    X, y = load_digits(return_X_y=True)
    test = [int(i) for i in digits_split(y)["test"]]
    extra = {"classes": DigitsDataModule.class_names, "raw_range": [0.0, 16.0], "scale": [1 / 8.0, -1.0]}
    return extra, {"indices": test, "targets": [str(int(y[i])) for i in test],
                   "inputs": [X[i].reshape(8, 8) for i in test]}


def fashion_extra(args: dict) -> tuple[dict, dict]:
    """The official test set (the run's data root), as the idx file's bytes 0..255; the model's
    input is (x / 255 - mean) / std with the config's mean and std, as the data module's."""
    from vecset.pipelines.images.fashion_mnist import (
        DEFAULT_ROOT,
        MEAN,
        STD,
        class_names,
        find_files,
        read_split,
    )

    mean, std = float(args.get("mean", MEAN)), float(args.get("std", STD))
    images, labels = read_split(*find_files(args.get("root", DEFAULT_ROOT))["test"])  # (N, 1, 28, 28) uint8
    classes = class_names()
    h, w = images.shape[2:]
    extra = {"classes": classes, "raw_range": [0.0, 255.0], "scale": [1 / (255.0 * std), -mean / std],
             "size": [int(h), int(w)], "dataset": "Fashion-MNIST"}
    return extra, {"indices": list(range(len(labels))), "targets": [classes[int(k)] for k in labels],
                   "inputs": list(images[:, 0].numpy())}


__all__ = ["ImagePredictor"]
