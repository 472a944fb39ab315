"""A pretraining run's checkpoint -> a small warm-start file for ``--model.init_args.init_from``:
the weights (``state_dict``) and a ``pretraining`` record (the config, the data file and its
SHA-256, the corpus licence, the command, epoch, step and the validation metrics), as
``data/molecules/pretrained_moses_10k.ckpt`` holds them. The optimizer state and the loops'
progress are left out (they are most of a resumable checkpoint's size).

    python scripts/export_trunk.py runs/pretrain_molecules_stream/version_0/checkpoints/last.ckpt \
        --data moses_400k.csv --config configs/pretrain_molecules_stream.yaml --out trunk.ckpt \
        --command "vecset fit --config ..." --licence "MOSES: MIT"
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from vecset.pipelines.pack import sha256


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("--data", required=True, help="the CSV pretrained on")
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True, help="the command that made the run")
    ap.add_argument("--licence", default="MOSES (molsets 0.3.1): MIT")
    ap.add_argument("--val", default=None, help="a JSON of the validation metrics to record")
    args = ap.parse_args()
    ckpt = torch.load(args.checkpoint, map_location="cpu", weights_only=True)
    data = Path(args.data)
    rows = sum(1 for _ in open(data)) - 1
    record = {"config": args.config, "data": data.name, "data_sha256": sha256(data), "data_rows": rows,
              "licence": args.licence, "command": args.command, "epoch": ckpt["epoch"],
              "global_step": ckpt["global_step"], "val": json.loads(args.val) if args.val else None,
              "note": "weights only (state_dict); for init_from"}
    torch.save({"state_dict": ckpt["state_dict"], "pretraining": record}, args.out)
    print(f"{args.out}: {Path(args.out).stat().st_size} bytes, sha256 {sha256(Path(args.out))}")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
