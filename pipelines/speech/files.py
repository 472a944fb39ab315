"""A speech split's audio files: a list file of utterance paths or a folder searched recursively
(every extension the reader reads; other files counted and reported)."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from vecset.encoders.speech import COMPANION_EXTS, audio_extensions, find_audio

log = logging.getLogger(__name__)


def scan_audio(folder: Path) -> list[Path]:
    """The audio files under ``folder`` (recursively, sorted): every extension the reader reads
    (``audio_extensions``). Other files are skipped, counted by extension and reported: at
    warning level unless they are all TIMIT's .phn/.wrd/.txt beside the utterances."""
    exts = audio_extensions()
    files, skipped = [], Counter()
    for f in sorted(folder.rglob("*")):
        if f.is_dir():
            continue
        if f.suffix.lower() in exts:
            files.append(f)
        else:
            skipped["hidden" if f.name.startswith(".") else f.suffix.lower() or "no-extension"] += 1
    if not files:
        raise ValueError(f"{folder}: no audio files under this folder (extensions read: {' '.join(exts)})")
    if skipped:
        import soundfile as sf

        level = logging.INFO if set(skipped) <= set(COMPANION_EXTS) else logging.WARNING
        log.log(level, "%s: %d audio files; skipped %d other files (%s): not a format the audio reader reads "
                "(soundfile with libsndfile %s: %s)", folder, len(files), sum(skipped.values()),
                ", ".join(f"{n} {k}" for k, n in sorted(skipped.items())), sf.__libsndfile_version__, " ".join(exts))
    return files


def list_audio(root: Path, spec: str) -> list[Path]:
    """A split given as a list file (utterance paths relative to ``root``, with or without the
    extension, one per line) or as a folder under ``root`` searched recursively; an empty list
    file is an error naming it."""
    p = root / spec
    if p.is_dir():
        return scan_audio(p)
    if not p.is_file():
        raise ValueError(f"{p}: split '{spec}' is neither a list file nor a folder under {root}")
    files = []
    exts = audio_extensions()
    for ln, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        stem = root / line.strip()
        audio = stem if stem.suffix.lower() in exts and stem.exists() else find_audio(stem)
        if audio is None:
            raise ValueError(f"{p}:{ln}: no audio file {stem}.wav, {stem}.flac or another audio extension "
                             f"({' '.join(exts)})")
        files.append(audio)
    if not files:  # a split with nothing to train or score on: say which list, not "num_samples=0"
        raise ValueError(f"{p}: split '{spec}' lists no utterances (the list file is empty); expected one utterance "
                         f"path per line, relative to {root}")
    return files


__all__ = ["list_audio", "scan_audio"]
