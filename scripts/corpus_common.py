"""What the corpus generator's synthesizers (Festival, espeak-ng, flite) share: installing their
Debian packages, resampling, Festival's radio phones and words -> .phn/.wrd rows (also flite's),
and writing one utterance in TIMIT layout.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))  # corpus_*.py, speech_text.py, flite_synth.py beside this file
from corpus_plan import Speaker  # noqa: E402
from speech_text import words_of  # noqa: E402

SR = 16000


def install_or_exit(packages: list[str], install: bool, what: str) -> None:
    """Installs the Debian ``packages`` (with ``--install``, as root where apt-get is), else
    stops with ``what`` and the command that installs them."""
    import os

    if install and os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"installing Debian packages: {' '.join(packages)}", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", *packages], check=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        return
    raise SystemExit(f"{what}. Install them with:\n  sudo apt-get install {' '.join(packages)}")


def resample(wav: np.ndarray, orig: int, new: int) -> np.ndarray:
    import torch
    import torchaudio.functional as AF
    if orig == new:
        return wav
    return AF.resample(torch.from_numpy(wav).float()[None], orig, new)[0].numpy()


def merge_clitics(words: list[list[str]]) -> list[tuple[str, str, str]]:
    """Festival's (start, end, name) words with a possessive split off (``John`` ``'s``) joined
    back into one word (``John's``), as the text and TIMIT's .wrd have it. Festival puts the
    clitic's phone into the preceding word's last syllable and gives the clitic itself no
    syllable (times ``0 0``): the joined word keeps the later of the two ends."""
    out: list[tuple[str, str, str]] = []
    for s, e, w in words:
        if w.startswith("'") and out:
            end = e if float(e) > float(out[-1][1]) else out[-1][1]
            out[-1] = (out[-1][0], end, out[-1][2] + w)
        else:
            out.append((s, e, w))
    return out


def words_differ(said: list[str], text: str) -> bool:
    """Whether a synthesizer's words (Festival's, flite's: lower case, apostrophes kept or
    dropped) are not the sentence's words."""
    return [w.lower().replace("'", "") for w in said] != [w.replace("'", "") for w in words_of(text)]


def radio_labels(segs: list[tuple[float, str]], said: list, text: str, n: int,
                 factor: float) -> tuple[list[list], list[tuple[int, int, str]], int, int]:
    """Segments in Festival's radio phone set (Festival's and flite's) -> the .phn and .wrd rows
    of a wave of ``n`` samples at 16 kHz read at 16000*``factor`` Hz (module docstring: a time t
    is sample round(t * 16000 / factor), the last segment ends at ``n``, zero-length segments
    dropped, the edge pauses ``h#``); ``said``: the synthesizer's (start, end, word) in seconds,
    one per word of ``text`` (whose spelling .wrd keeps), snapped to the phone boundaries.
    Returns (phn, words, dropped segments, dropped words)."""
    phones = [ph for _, ph in segs]
    ends = [min(n, int(round(t * SR / factor))) for t, _ in segs]
    ends[-1] = n  # the wave runs a few ms past (or short of) the last segment end
    phn, start, dropped = [], 0, 0
    for e, ph in zip(ends, phones, strict=False):
        if e <= start:  # rounds to zero samples (or was clipped at the file end)
            dropped += 1
            continue
        phn.append([start, e, ph])
        start = e
    phn[-1][1] = n
    if phn[0][2] == "pau":
        phn[0][2] = "h#"
    if phn[-1][2] == "pau":
        phn[-1][2] = "h#"
    words, dropped_words = [], 0
    bounds = [0] + [e for _, e, _ in phn]
    for (s, e, _), w in zip(said, words_of(text), strict=True):  # the text's spelling: dogs', ma'am
        # snap to the nearest phone boundary: the word times carry more digits than the segs
        s_, e_ = (min(bounds, key=lambda b: abs(b - float(t) * SR / factor)) for t in (s, e))
        if e_ > s_:
            words.append((s_, e_, w))
        else:  # shorter than half a phone: no span of its own
            dropped_words += 1
    return phn, words, dropped, dropped_words


def write_utterance(out: Path, spk: Speaker, stem: str, wav: np.ndarray, phn: list, words: list, text: str,
                    fmt: str, extra: dict) -> dict:
    """One utterance's audio (float at 16 kHz), .phn, .wrd and .txt under ``out/<speaker>/``."""
    n = len(wav)
    d = out / spk.name
    d.mkdir(parents=True, exist_ok=True)
    pcm = np.clip(np.round(wav * 32767), -32768, 32767).astype(np.int16)
    sf.write(d / f"{stem}.{fmt}", pcm, SR, subtype="PCM_16", format=fmt.upper())
    (d / f"{stem}.phn").write_text("".join(f"{s} {e} {p}\n" for s, e, p in phn))
    (d / f"{stem}.wrd").write_text("".join(f"{s} {e} {w}\n" for s, e, w in words))
    (d / f"{stem}.txt").write_text(f"0 {n} {text}\n")
    return {"utt": f"{spk.name}/{stem}", "samples": n, **extra}
