"""CMU flite's side of the corpus generator: one utterance synthesized in this process
(scripts/flite_synth.py), its radio phones labelled as Festival's, resampled and written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # corpus_*.py, speech_text.py, flite_synth.py beside this file
from corpus_common import (  # noqa: E402
    SR,
    install_or_exit,
    merge_clitics,
    radio_labels,
    resample,
    words_differ,
    write_utterance,
)
from corpus_plan import Speaker  # noqa: E402

_FLITE = None


def flite_utterance(key: str, spk: Speaker, text: str, out: Path, fmt: str) -> dict:
    """Synthesize and write one flite utterance (scripts/flite_synth.py; one library instance per
    process). Its segments are Festival's radio phones with end times, labelled as Festival's
    (``radio_labels``); its words, with a split-off possessive joined back (``merge_clitics``), must
    be the sentence's words, else the utterance is skipped (``flite_words_differ``)."""
    global _FLITE
    import flite_synth

    if _FLITE is None:
        _FLITE = flite_synth.Flite()
    _FLITE.set_voice(spk.voice, spk.stretch, spk.f0_mean)
    try:
        spoken = _FLITE.say(text)
    except flite_synth.SkipUtterance as e:
        return {"utt": key.replace("__", "/"), "skipped": str(e), "text": text}
    said = merge_clitics([list(w) for w in spoken.words])
    if words_differ([w for _, _, w in said], text):
        return {"utt": key.replace("__", "/"), "skipped": "flite_words_differ", "text": text,
                "flite_words": " ".join(w for _, _, w in said)}
    # flite's 16 kHz -> 16 kHz read at 16000*f Hz, as Festival's wave
    wav = resample(spoken.wav.astype(np.float32) / 32768.0, spoken.rate, SR)
    if spk.resample != 1.0:
        wav = resample(wav, int(round(SR * spk.resample)), SR)
    phn, words, dropped, dropped_words = radio_labels(spoken.segments, said, text, len(wav), spk.resample)
    return write_utterance(out, spk, key.split("__")[1], wav, phn, words, text, fmt,
                           {"dropped_segments": dropped, "dropped_words": dropped_words})


def run_flite(items: list[tuple[str, Speaker, str]], out: Path, fmt: str) -> list[dict]:
    """flite utterances one after another in this process (flite's voices synthesize about 50
    seconds of speech a second on one core, so no worker processes)."""
    if not items:
        return []
    import flite_synth

    why = flite_synth.missing()
    if why:
        raise SystemExit(f"flite voices requested but {why}")
    from vecset.pipelines.console import track

    return [flite_utterance(k, s, t, out, fmt) for k, s, t in track(items, "synthesizing (flite)")]


def check_flite(install: bool) -> None:
    import flite_synth

    if flite_synth.missing() is not None:
        install_or_exit(flite_synth.PACKAGES, install, "flite voices requested but flite is missing")
