"""The CNN a user copies, on vecset's Fashion-MNIST split, for a wall-clock budget (issue 61).

The model is the PyTorch examples' MNIST network (pytorch/examples, mnist/main.py: two 3x3
convolutions of 32 and 64 channels, a 2x2 max-pool, dropout 0.25, a 128-unit linear layer, dropout 0.5,
10 outputs; 1.2 M parameters), trained as a user copying it would: Adam at 1e-3, fp32.
The data is ``FashionMNISTDataModule``'s: the same 54,000 / 6,000 split, the same crop and flip,
drawn as ``configs/fashion_mnist.yaml`` draws them (``--loader batch``: on whole batches of the
images held in memory) or per image by torchvision in a ``DataLoader``, as the examples do
(``--loader per_image``).
The learning rate follows a cosine over the budget's time. Validation runs after every epoch;
the weights with the best validation accuracy are tested on the 10,000 official test images.

A row goes to ``--out`` (JSON, one row per run appended): steps/s, epochs, best validation
accuracy, test accuracy, both again with a test-time flip (``*_flip``), the validation curve, parameters, the command, the load before and after. Run it beside
``vecset fit --config fashion_mnist`` on the other core, each with one thread:

    OMP_NUM_THREADS=1 taskset -c 1 python bench/fashion_examples_cnn.py --minutes 30 --seed 0
    python bench/fashion_examples_cnn.py --dry --out /tmp/cnn.json     # 2 steps an epoch: checks the script
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[1]


class ExamplesNet(nn.Module):
    """pytorch/examples mnist/main.py's ``Net`` (log-softmax left to the loss)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        x = torch.flatten(self.dropout1(x), 1)
        return self.fc2(self.dropout2(F.relu(self.fc1(x))))


def accuracy(model: nn.Module, loader, flip: bool = False) -> float:
    """Top-1 accuracy; ``flip``: of the mean softmax of each image and its mirror image (test-time
    flip, as ``TaskModule(test_time_flip=True)`` does for the CCT)."""
    model.eval()
    right = total = 0
    with torch.no_grad():
        for batch in loader:
            x = batch["image"]
            scores = model(x).softmax(1)
            if flip:
                scores = (scores + model(x.flip(-1)).softmax(1)) / 2
            right += (scores.argmax(1) == batch["y"]).sum().item()
            total += len(batch["y"])
    model.train()
    return right / total


def train(minutes: float, seed: int, dry: bool, root: str | None = None, loader: str = "batch",
          log=print) -> dict:
    from pytorch_lightning import seed_everything

    from vecset.pipelines import FashionMNISTDataModule
    from vecset.pipelines.data.batch_augment import HorizontalFlip, RandomCrop
    from vecset.pipelines.data.device_loader import DeviceLoader

    seed_everything(seed, verbose=False)  # the model's init and the batch loader's order and draws
    subset = dict(max_train=256, max_val=64, max_test=64) if dry else {}
    augment = (dict(augment=False, batch_augment=[RandomCrop(2), HorizontalFlip()]) if loader == "batch"
               else {})  # per_image: the data module's default torchvision crop and flip
    dm = FashionMNISTDataModule(batch_size=128, **augment, **subset, **({"root": root} if root else {}))
    dm.setup("fit")
    dm.setup("test")
    model = ExamplesNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    budget = minutes * 60.0
    start = time.monotonic()
    steps = epochs = 0
    best_val, best_state, curve = -1.0, None, []
    while time.monotonic() - start < budget:
        train_loader = dm.train_dataloader()
        if isinstance(train_loader, DeviceLoader):  # a new permutation and new draws each epoch
            train_loader.sampler.set_epoch(epochs)
        for i, batch in enumerate(train_loader):
            used = (time.monotonic() - start) / budget
            if used >= 1 or (dry and i == 2):
                break
            for group in opt.param_groups:  # cosine over the budget's time
                group["lr"] = 1e-3 * 0.5 * (1 + math.cos(math.pi * used))
            loss = F.cross_entropy(model(batch["image"]), batch["y"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
        else:
            epochs += 1
        val = accuracy(model, dm.val_dataloader())
        curve.append({"epoch": epochs, "step": steps, "minutes": (time.monotonic() - start) / 60, "val_acc": val})
        log(f"epoch {epochs} steps {steps} minutes {(time.monotonic() - start) / 60:.1f} val_acc {val:.4f}")
        if val > best_val:
            best_val, best_state = val, {k: v.clone() for k, v in model.state_dict().items()}
        if dry:
            break
    train_seconds = time.monotonic() - start
    model.load_state_dict(best_state)
    return {"model": "pytorch/examples MNIST CNN", "seed": seed, "minutes": minutes, "steps": steps,
            "epochs_completed": epochs, "steps_per_s": steps / train_seconds, "train_seconds": train_seconds,
            "params": sum(p.numel() for p in model.parameters()), "val_acc": best_val,
            "test_acc": accuracy(model, dm.test_dataloader()),
            "val_acc_flip": accuracy(model, dm.val_dataloader(), flip=True),
            "test_acc_flip": accuracy(model, dm.test_dataloader(), flip=True), "val_curve": curve,
            "precision": "fp32", "threads": torch.get_num_threads(), "loader": loader}


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dry", action="store_true", help="tiny subsets, 2 steps, one epoch")
    ap.add_argument("--loader", choices=["batch", "per_image"], default="batch",
                    help="crop and flip on whole batches (as configs/fashion_mnist.yaml) or per image (torchvision)")
    ap.add_argument("--root", help="the Fashion-MNIST idx files (default: the data module's)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "fashion_examples_cnn.json"))
    args = ap.parse_args(argv)
    load_before = os.getloadavg()
    row = train(args.minutes, args.seed, args.dry, args.root, args.loader)
    row |= {"command": shlex.join(["python", "bench/fashion_examples_cnn.py", *(sys.argv[1:] if argv is None else argv)]),
            "cpus": sorted(os.sched_getaffinity(0)), "load_before": load_before, "load_after": os.getloadavg()}
    out = Path(args.out)
    rows = json.loads(out.read_text())["rows"] if out.is_file() else []
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows + [row]}, indent=2))
    print(json.dumps(row, indent=2))
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main()
