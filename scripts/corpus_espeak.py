"""espeak-ng's side of the corpus generator: one utterance synthesized in this process
(scripts/espeak_synth.py: phone timings from its phoneme events), resampled and written.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # corpus_*.py, speech_text.py, flite_synth.py beside this file
from corpus_common import SR, install_or_exit, resample, write_utterance  # noqa: E402
from corpus_plan import Speaker  # noqa: E402

_ESPEAK = None


def espeak_utterance(job: tuple[str, Speaker, str, str, str]) -> dict:
    """Synthesize and write one espeak utterance (one library instance per process: it is global)."""
    global _ESPEAK
    import espeak_synth

    key, spk, text, out, fmt = job
    if _ESPEAK is None:
        _ESPEAK = espeak_synth.Espeak()
    _ESPEAK.set_voice(spk.voice, spk.rate, spk.pitch, spk.pitch_range)
    try:
        spoken = _ESPEAK.say(text)
    except espeak_synth.SkipUtterance as e:
        return {"utt": key.replace("__", "/"), "skipped": str(e), "text": text}
    unmapped: Counter = Counter()
    # espeak's 22050 Hz -> 16 kHz, then the resample factor f as for Festival (16000*f -> 16000,
    # a whole number of Hz: a small resampling kernel): sample x lands at x * 16000 / (22050 f)
    src = int(round(SR * spk.resample))
    label_rate = spoken.rate * src / SR
    phn, words = espeak_synth.to_corpus_phones(
        espeak_synth.Spoken(spoken.wav, label_rate, spoken.phones, spoken.words), SR, unmapped)
    wav = resample(resample(spoken.wav.astype(np.float32) / 32768.0, spoken.rate, SR), src, SR)
    n = len(wav)
    phn[-1][1] = n  # the resampled length may differ from the rescaled end by a sample
    phn = [sg for sg in phn if sg[0] < n]
    phn[-1][1] = n
    words = [(a, min(b, n), w) for a, b, w in words]
    return write_utterance(Path(out), spk, key.split("__")[1], wav, phn, words, text, fmt,
                           {"dropped_segments": spoken.dropped_zero_length, "dropped_words": 0,
                            "unmapped": dict(unmapped)})


def run_espeak(items: list[tuple[str, Speaker, str]], out: Path, fmt: str) -> list[dict]:
    """espeak utterances one after another in this process (espeak is fast: about 80 sentences a
    second on one core, so no worker processes)."""
    if not items:
        return []
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import espeak_synth

    why = espeak_synth.missing()
    if why:
        raise SystemExit(f"espeak voices requested but {why}")
    from vecset.pipelines.console import track

    return [espeak_utterance((k, s, t, str(out), fmt)) for k, s, t in track(items, "synthesizing (espeak-ng)")]


def espeak_version() -> str:
    res = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True) if shutil.which("espeak-ng") else None
    return res.stdout.strip() if res else "libespeak-ng1"


ESPEAK_PACKAGES = ["espeak-ng", "libespeak-ng1"]


def check_espeak(install: bool) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import espeak_synth

    if espeak_synth.missing() is not None:
        install_or_exit(ESPEAK_PACKAGES, install, "espeak voices requested but espeak-ng is missing")
