"""Tiny hand-made TIMIT-layout corpora: for the word and sentence tests, utterances of 0.5 s of
quiet noise at 16 kHz with a .phn, a .wrd and a .txt, in train/dev/test lists; for the sample-rate
tests, one utterance of tones (``write_tones``) at any rate."""

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


# segments in milliseconds: every boundary is a multiple of 10 ms, a whole number of samples at 8, 16
# and 44.1 kHz, and 2.5 ms from the nearest frame centre (centres are at 12.5 + 10 t ms)
TONES_MS = [(0, 60, "h#", 0), (60, 150, "s", 3000), (150, 320, "aa", 700), (320, 400, "t", 1800), (400, 500, "h#", 0)]


def write_tones(d: Path, stem: str, sr: int, ext: str = "wav", phn_end_extra: int = 0) -> Path:
    """One utterance of TONES_MS at ``sr``: a tone (or near silence) per segment, and its .phn in
    samples at ``sr``; the last segment ends ``phn_end_extra`` samples after the audio does."""
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    parts, lines = [], []
    for a, b, ph, hz in TONES_MS:
        s, e = a * sr // 1000, b * sr // 1000
        t = np.arange(s, e) / sr
        parts.append(0.3 * np.sin(2 * np.pi * hz * t) + 0.003 * rng.standard_normal(e - s))
        lines.append(f"{s} {e + (phn_end_extra if b == TONES_MS[-1][1] else 0)} {ph}\n")
    path = d / f"{stem}.{ext}"
    sf.write(path, np.concatenate(parts).astype(np.float32), sr)
    (d / f"{stem}.phn").write_text("".join(lines))
    return path


def textgrid(phones: list[tuple[float, float, str]], words: list[tuple[float, float, str]] | None = None,
             phone_tier: str = "phones", short: bool = False) -> str:
    """A TextGrid text, long (Praat's default) or short format, written by hand as Praat does."""
    tiers = [(phone_tier, phones)] + ([("words", words)] if words is not None else [])
    xmax = max(e for _, ivs in tiers for _, e, _ in ivs)
    if short:
        out = ['File type = "ooTextFile"', 'Object class = "TextGrid"', "", "0", str(xmax), "<exists>", str(len(tiers))]
        for name, ivs in tiers:
            out += ['"IntervalTier"', f'"{name}"', "0", str(xmax), str(len(ivs))]
            for s, e, lab in ivs:
                out += [str(s), str(e), f'"{lab}"']
        return "\n".join(out) + "\n"
    out = ['File type = "ooTextFile"', 'Object class = "TextGrid"', "", "xmin = 0", f"xmax = {xmax}",
           "tiers? <exists>", f"size = {len(tiers)}", "item []:"]
    for k, (name, ivs) in enumerate(tiers, 1):
        out += [f"    item [{k}]:", '        class = "IntervalTier"', f'        name = "{name}"', "        xmin = 0",
                f"        xmax = {xmax}", f"        intervals: size = {len(ivs)}"]
        for i, (s, e, lab) in enumerate(ivs, 1):
            out += [f"        intervals [{i}]:", f"            xmin = {s}", f"            xmax = {e}",
                    f'            text = "{lab}"']
    return "\n".join(out) + "\n"
