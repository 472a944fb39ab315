"""G2P test-set scores of trained checkpoints, greedy vs beam search.

    python bench/g2p_decode.py runs/g2p/version_0 runs/g2p_bahdanau/version_0 --beams 1 5

Reads each run's results.json (best checkpoint), decodes the CMUdict test split (the split
of the run's config), prints a table and writes bench/results/g2p_decode.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import yaml  # noqa: E402

from bench.common import machine  # noqa: E402
from vecset.encoders.text import collate_text
from vecset.heads.edit_metrics import PhoneErrorRate, WordErrorRate  # noqa: E402
from vecset.pipelines.text.cmudict import CMUDictDataModule
from vecset.pipelines.training.task import TaskModule


def evaluate(run: Path, beams: list[int], batch_size: int) -> list[dict]:
    res = json.loads((run / "results.json").read_text())
    ckpt = Path(res["checkpoint"])
    if not ckpt.is_absolute() and not ckpt.exists():
        ckpt = run.parents[2] / ckpt
    model = TaskModule.load_from_checkpoint(ckpt, map_location="cpu").eval()
    data_args = yaml.safe_load((run / "config.yaml").read_text())["data"]["init_args"]
    dm = CMUDictDataModule(**{k: v for k, v in data_args.items() if k in (
        "stress", "pronunciations", "split_seed", "fractions", "max_words", "dict_file")})
    dm.setup("test")
    items = dm.splits["test"]
    rows = []
    for k in beams:
        per, wer, unfinished = PhoneErrorRate(), WordErrorRate(), 0
        t0 = time.time()
        with torch.no_grad():
            for i in range(0, len(items), batch_size):
                batch = collate_text(items[i : i + batch_size])
                out = model(batch)
                ids, fin = model.head.decode(out["memory"], out["memory_mask"], beam_size=k)
                preds = [model.head.vocab.decode(r) for r in ids.tolist()]
                refs = model.head._references(batch)
                per.update(preds, refs), wer.update(preds, refs)
                unfinished += int((~fin).sum())
        rows.append({"run": str(run), "decoder": type(model.head.decoder).__name__, "beam": k,
                     "words": len(items), "per": float(per.compute()), "wer": float(wer.compute()),
                     "unfinished": unfinished, "seconds": round(time.time() - t0, 1)})
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--beams", nargs="+", type=int, default=[1, 5])
    ap.add_argument("--batch_size", type=int, default=256)
    ap.add_argument("--out", type=Path, default=Path("bench/results/g2p_decode.json"))
    args = ap.parse_args()
    rows = [r for run in args.runs for r in evaluate(run, args.beams, args.batch_size)]
    print(f"\n{'decoder':<22}{'beam':>5}{'words':>7}{'PER %':>8}{'WER %':>8}{'unfin':>7}{'sec':>8}")
    for r in rows:
        print(f"{r['decoder']:<22}{r['beam']:>5}{r['words']:>7}{100 * r['per']:>8.2f}{100 * r['wer']:>8.2f}"
              f"{r['unfinished']:>7}{r['seconds']:>8.1f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine(), "note": "2 CPU cores shared with other jobs", "rows": rows}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
