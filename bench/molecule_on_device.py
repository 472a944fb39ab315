"""FreeSolv training steps with the graphs on the device against the classic loader, in one process.

Both data modules and one model are built from ``configs/freesolv.yaml`` as ``vecset fit`` builds
them; the two loaders then take turns, ``--chunk`` training steps each (next batch, forward,
loss, backward, AdamW), for ``--rounds`` rounds, so that a loaded machine's drift falls on both
alike. Two more variants add ``length_buckets: pow2``, and with it ``bucket_batches``. The number is each variant's molecules
per second over all its rounds and its ratio to the classic loader's (and the median of the
per-round ratios of step time). On a CUDA device (``--device cuda``) the same, synchronized at each chunk's end.

    python bench/molecule_on_device.py                       # the CPU, 2 threads
    python bench/molecule_on_device.py --rounds 20 --chunk 10 --out bench/results/molecule_on_device.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {"classic": [], "on_device": ["--data.init_args.placement.on_device=true"],
            "on_device_pow2": ["--data.init_args.placement.on_device=true", "--data.init_args.placement.length_buckets=pow2"],
            "on_device_pow2_bucket_batches": ["--data.init_args.placement.on_device=true", "--data.init_args.placement.length_buckets=pow2",
                                              "--data.init_args.placement.bucket_batches=true"]}


def build(extra: list[str], device: torch.device):
    from vecset.pipelines.cli import run_cli

    accel = "gpu" if device.type == "cuda" else "cpu"
    cli = run_cli(["--config", str(ROOT / "configs/freesolv.yaml"), "--trainer.logger=false",
                   f"--trainer.accelerator={accel}", "--trainer.devices=1", *extra], run=False)
    return cli.model, cli.datamodule


def endless(dm, device: torch.device):
    """Training batches forever (epoch after epoch), each on ``device``."""
    from vecset.pipelines.reports.outputs import to_device

    dm.setup("fit")
    epoch = 0
    while True:
        loader = dm.placement.loader(dm, "train", True, device) or dm.train_dataloader()
        if hasattr(loader.sampler, "set_epoch"):
            loader.sampler.set_epoch(epoch)
        for batch in loader:
            yield to_device(batch, device)
        epoch += 1


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--chunk", type=int, default=8, help="steps per variant per round")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    device = torch.device(a.device)
    load_before = os.getloadavg()
    if device.type == "cpu":
        torch.set_num_threads(2)
    from vecset.pipelines.training.step import forward_task

    torch.manual_seed(0)
    model, _ = build([], device)
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    streams = {name: endless(build(args, device)[1], device) for name, args in VARIANTS.items()}
    seconds = {name: [] for name in VARIANTS}
    items = dict.fromkeys(VARIANTS, 0)  # molecules trained on (bucket_batches' batches can be short)
    for r in range(a.rounds + 1):  # round 0: warm-up, not counted
        for name, stream in streams.items():
            t0 = time.perf_counter()
            for _ in range(a.chunk):
                batch = next(stream)
                if r:
                    items[name] += len(batch["ids"])
                loss = model.head.loss(forward_task(model.encoder, model.backbone, model.head, batch), batch)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if r:
                seconds[name].append(time.perf_counter() - t0)
    steps = {k: a.chunk * len(v) / sum(v) for k, v in seconds.items()}
    rate = {k: items[k] / sum(v) for k, v in seconds.items()}
    rows = [{"variant": k, "steps_per_s": steps[k], "items_per_s": rate[k], "mean_batch": items[k] / (a.chunk * a.rounds),
             "ratio_to_classic": rate[k] / rate["classic"],
             "step_time_ratio_median_of_rounds": statistics.median(c / s for s, c in
                                                                   zip(v, seconds["classic"], strict=True))}
            for k, v in seconds.items()]
    for row in rows:
        print(f"{row['variant']:<30}{row['items_per_s']:>8.1f} molecules/s ({row['steps_per_s']:.2f} steps/s, "
              f"batch {row['mean_batch']:.1f})  x{row['ratio_to_classic']:.3f} (step time, median of rounds "
              f"x{row['step_time_ratio_median_of_rounds']:.3f})")
    result = {"command": "python bench/molecule_on_device.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "device": str(device), "threads": torch.get_num_threads(), "rounds": a.rounds, "chunk": a.chunk,
              "load_before": load_before,
              "load_after": os.getloadavg(), "rows": rows}
    if a.out:
        a.out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {a.out}")
    return result


if __name__ == "__main__":
    main()
