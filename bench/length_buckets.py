"""A run's test metrics by input length: the test items grouped into length buckets, each
bucket scored with the head's own metrics (``head.metrics()``, ``head.metric_inputs``), so a
bucket's number means what the run's ``test_*`` number means (frame accuracy for speech, PER
and WER for G2P) and all buckets together give the run's test metric back.

The model is the run's best checkpoint (``results.json``), the data module is rebuilt from
the run's ``config.yaml`` (its ``data`` class and arguments), test split only.

    python bench/length_buckets.py runs/<name>/version_0 --length frames --edges 200 300 400 600
    python bench/length_buckets.py runs/<name>/version_0 --length letters --edges 6 8 10 12

prints one JSON line: ``{"buckets": [{"bucket", "items", "<metric>": ...}, ...], "all": {...}}``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# how long a test item is, by the unit its modality counts in
LENGTHS: dict[str, Callable[[dict], int]] = {
    "frames": lambda item: len(item["x"]),  # speech: 10 ms frames
    "letters": lambda item: len(item["text"]),  # text: characters of the word
}


def bucket_label(length: int, edges: list[int]) -> str:
    """``<=e0``, ``e0+1-e1``, ..., ``>e_last`` for increasing integer ``edges``."""
    if list(edges) != sorted(set(edges)) or not edges:
        raise ValueError(f"bucket edges must be increasing integers, got {edges}")
    if length <= edges[0]:
        return f"<={edges[0]}"
    for lo, hi in zip(edges, edges[1:], strict=False):
        if length <= hi:
            return f"{lo + 1}-{hi}"
    return f">{edges[-1]}"


def bucket_order(edges: list[int]) -> list[str]:
    """Every label of ``bucket_label`` for these edges, shortest first."""
    return [f"<={edges[0]}", *(f"{lo + 1}-{hi}" for lo, hi in zip(edges, edges[1:], strict=False)), f">{edges[-1]}"]


def group_by_bucket(lengths: list[int], edges: list[int]) -> dict[str, list[int]]:
    """Item indices per bucket, in ``bucket_order`` (empty buckets left out)."""
    groups: dict[str, list[int]] = {b: [] for b in bucket_order(edges)}
    for i, n in enumerate(lengths):
        groups[bucket_label(n, edges)].append(i)
    return {b: idx for b, idx in groups.items() if idx}


def bucket_metrics(model, items: list[dict], collate: Callable[[list[dict]], dict], lengths: list[int],
                   edges: list[int], batch_size: int = 32) -> dict:
    """The head's metrics per length bucket and over all items.

    Shapes: items: the test split's items (dicts as its loader's dataset returns them),
    lengths: one int per item -> {"buckets": [{"bucket", "items", "min_length", "max_length",
    metric: float, ...}], "all": {"items", metric: float, ...}}
    """
    from vecset.pipelines.reports.outputs import inference, to_device

    head = model.head
    total = head.metrics()
    rows = []
    with inference(model):
        for bucket, idx in group_by_bucket(lengths, edges).items():
            metrics = head.metrics()
            for s in range(0, len(idx), batch_size):
                batch = to_device(collate([items[i] for i in idx[s:s + batch_size]]), model.device)
                inputs = head.metric_inputs(model(batch), batch)
                metrics.update(*inputs)
                total.update(*inputs)
            rows.append({"bucket": bucket, "items": len(idx), "min_length": min(lengths[i] for i in idx),
                         "max_length": max(lengths[i] for i in idx),
                         **{k: float(v) for k, v in metrics.compute().items()}})
    return {"buckets": rows, "all": {"items": len(items), **{k: float(v) for k, v in total.compute().items()}}}


def test_data(run_dir: Path):
    """The run's data module, rebuilt from its config.yaml and set up for test."""
    import yaml

    data = yaml.safe_load((run_dir / "config.yaml").read_text())["data"]
    module, _, name = data["class_path"].rpartition(".")
    dm = getattr(importlib.import_module(module), name)(**(data.get("init_args") or {}))
    dm.setup("test")
    return dm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--length", choices=sorted(LENGTHS), required=True)
    ap.add_argument("--edges", type=int, nargs="+", required=True, help="bucket upper bounds, increasing")
    ap.add_argument("--batch-size", type=int, default=32)
    a = ap.parse_args()
    from vecset.pipelines.training.task import TaskModule

    res = json.loads((a.run_dir / "results.json").read_text())
    model = TaskModule.load_from_checkpoint(res["checkpoint"], map_location="cpu")
    dm = test_data(a.run_dir)
    ds = dm.test_dataloader().dataset
    items = [ds[i] for i in range(len(ds))]
    lengths = [LENGTHS[a.length](it) for it in items]
    out = bucket_metrics(model, items, dm.collate, lengths, a.edges, a.batch_size)
    print(json.dumps({"length": a.length, "edges": a.edges, **out}))


if __name__ == "__main__":
    main()
