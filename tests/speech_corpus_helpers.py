"""A tiny hand-made TIMIT-layout corpus for the word and sentence tests: each utterance is
0.5 s of quiet noise at 16 kHz with a .phn, a .wrd and a .txt, in train/dev/test lists."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

N = 8000  # samples per utterance (0.5 s at 16 kHz): 48 frames


def write_utterance(root: Path, name: str, words: list[tuple[int, int, str]], sentence: str,
                    phones: list[tuple[int, int, str]] | None = None) -> None:
    """``root/name`` (speaker/utt) .flac + .phn (default: h# over the whole file) + .wrd + .txt."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(len(name))
    sf.write(path.with_suffix(".flac"), (0.01 * rng.standard_normal(N)).astype(np.float32), 16000)
    path.with_suffix(".phn").write_text("".join(f"{s} {e} {p}\n" for s, e, p in phones or [(0, N, "h#")]))
    path.with_suffix(".wrd").write_text("".join(f"{s} {e} {w}\n" for s, e, w in words))
    path.with_suffix(".txt").write_text(f"0 {N} {sentence}\n")


def write_lists(root: Path, **splits: list[str]) -> None:
    for split, names in splits.items():
        (root / f"{split}.lst").write_text("".join(f"{n}\n" for n in names))
