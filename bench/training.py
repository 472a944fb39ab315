"""Training-step throughput of each job on the CPU, and the share of step time spent
waiting for data (the loader must not be the bottleneck: under 10%).

Each job is built from its config exactly as ``vecset fit`` builds it (model and
DataModule), then trained for a few steps with AdamW outside Lightning, timing
``next(loader)`` apart from forward + backward + optimizer step.

    python bench/training.py                         # every job config that exists
    python bench/training.py configs/debug.yaml      # chosen ones
    python bench/training.py configs/fashion_mnist.yaml configs/fashion_mnist_cnn.yaml --name training_fashion_mnist
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from bench.common import table, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
JOBS = ["debug", "digits", "digits_pixel", "speech_frames", "speech_frames_mlp", "speech_frames_bilstm",
        "freesolv", "solubility", "g2p", "multitask", "fashion_mnist", "fashion_mnist_cnn"]


def batch_size_of(batch) -> int:
    if isinstance(batch, dict) and "ids" in batch:
        return len(batch["ids"])
    if isinstance(batch, dict):  # multi-task: one batch per task
        return sum(batch_size_of(b) for b in batch.values() if b is not None)
    return 0


def loss_of(model, batch):
    from vecset.pipelines.training.multitask import MultiTaskModule

    if isinstance(model, MultiTaskModule):
        return sum(model.loss_weights[t] * model.heads[t].loss(model(t, b), b) for t, b in batch.items() if b is not None)
    return model.head.loss(model(batch), batch)


def bench_job(config: Path, steps: int, warmup: int, args: list[str] = ()) -> dict:
    """Step time and data wait of ``config`` (with command-line ``args``) over ``steps`` steps, in
    the precision the run would use (``trainer.precision``, ``auto`` resolved as ``vecset fit`` does)."""
    from vecset.pipelines.cli import run_cli
    from vecset.pipelines.training.hand_over import hand_over
    from vecset.pipelines.training.multitask import MultiTaskDataModule

    cli = run_cli(["--config", str(config), "--trainer.logger=false", *args], run=False)
    model, dm = cli.model, cli.datamodule
    dm.prepare_data()
    dm.setup("fit")
    # the hand-over, as TaskModule.setup / MultiTaskModule.setup do at the start of fit
    if isinstance(dm, MultiTaskDataModule):
        for t, sub in dm.tasks.items():
            hand_over(sub, "fit", model.encoders[t], model.heads[t], task=t)
    else:
        hand_over(dm, "fit", model.encoder, model.head)
    model.train()
    precision = cli.trainer.precision_plugin
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    loader = dm.train_dataloader()
    it = iter(loader)
    wait = compute = 0.0
    samples = 0
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            it = iter(loader)
            batch = next(it)
        if isinstance(batch, tuple):  # CombinedLoader yields (batch, batch_idx, dataloader_idx)
            batch = batch[0]
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with precision.forward_context():  # Lightning's autocast for bf16-mixed, nothing for fp32
            loss = loss_of(model, batch)
        loss.backward()
        opt.step()
        t2 = time.perf_counter()
        if i >= warmup:
            wait += t1 - t0
            compute += t2 - t1
            samples += batch_size_of(batch)
    total = wait + compute
    return {"job": config.stem, "steps": steps, "samples_per_s": samples / total, "step_s": total / steps,
            "data_wait_share": wait / total, "under_10pct": wait / total < 0.10,
            "train_batches": len(loader), "precision": cli.trainer.precision}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("configs", nargs="*", type=Path)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--name", default="training", help="bench/results/<name>.json (chosen configs: another name "
                                                       "keeps the full table)")
    args = ap.parse_args()
    configs = args.configs or [ROOT / "configs" / f"{j}.yaml" for j in JOBS if (ROOT / "configs" / f"{j}.yaml").exists()]
    rows = []
    for c in configs:
        try:
            rows.append(bench_job(c, args.steps, args.warmup))
        except Exception as e:  # report the job that failed, keep measuring the others
            rows.append({"job": c.stem, "error": f"{type(e).__name__}: {e}"[:200]})
        print(rows[-1], flush=True)
    print(table(rows, ["job", "steps", "samples_per_s", "step_s", "data_wait_share", "under_10pct", "error"]))
    print(f"wrote {write_json(args.name, {'steps': args.steps, 'rows': rows})}")


if __name__ == "__main__":
    main()
