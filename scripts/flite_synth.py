"""CMU Flite through its C library (ctypes on ``libflite.so.1``): audio with phone and word timings.

Source: CMU Flite 2.2 (Carnegie Mellon University, BSD-style licence; Debian package ``flite``,
which brings the library ``libflite1`` and its voices). The ``flite`` program prints the phones
and their end times (``-psdur``: Festival's radio phone set plus ``pau``) but not where a word
ends (``-pr Word`` prints the words' names only). The library gives both from the utterance it
synthesizes: the Segment relation (each phone's name and end time, what ``-psdur`` prints) and,
for each item of the Word relation, its first and last segment through the SylStructure relation
(word -> syllables -> segments), the structure Festival's word times come from too.

The audio and the phones are those of the ``flite`` program with the same settings, sample for
sample (``flite -voice rms --setf duration_stretch=1.1 -psdur -t TEXT -o out.wav``; a test checks
it): flite's noise excitation draws from the C library's ``rand()``, so the generator is reseeded
(``srand(1)``, a fresh process's state) before each utterance, which also makes an utterance's
audio independent of what the process synthesized before.

Voices (``VOICES``): ``awb`` (Scottish English, male) and ``rms`` (US English, male), both
clustergen voices of the CMU ARCTIC recordings, 16 kHz. ``awb`` honours a target F0 mean
(``int_f0_target_mean``); ``rms`` ignores it (the same audio for any mean: a test checks both),
so only its tempo (``duration_stretch``) is set. flite's other voices are refused
(``LEAKING``): its ``slt`` and ``kal``/``kal16`` are the same recorded speakers as Festival's
``slt`` and ``kal``, so a corpus holding both would have a "held-out" voice whose speaker the
model was trained on. ``awb_time`` is a limited-domain voice (it says the time of day only).

``Flite`` holds the library's global state (its voices and ``rand()``): one instance per process.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

LIBRARY = "libflite.so.1"
VOICES = {"awb": True, "rms": False}  # voice -> honours a target F0 mean
# flite voice -> the Festival voice recorded by the same speaker
LEAKING = {"slt": "slt", "kal": "kal", "kal16": "kal"}
PACKAGES = ["flite"]  # Debian: brings libflite1 (the library and the voices)

# flite keeps a feature's name pointer (it does not copy it): these stay alive with the module
DURATION_STRETCH = b"duration_stretch"
F0_MEAN = b"int_f0_target_mean"


def voice_library(voice: str) -> str:
    return f"libflite_cmu_us_{voice}.so.1"


def missing() -> str | None:
    """Why flite cannot be used here (None: it can)."""
    for lib in (LIBRARY, *(voice_library(v) for v in VOICES)):
        try:
            ctypes.CDLL(lib)
        except OSError:
            return f"{lib} not found: apt-get install {' '.join(PACKAGES)} (it brings libflite1)"
    return None


class SkipUtterance(Exception):
    """An utterance flite could not say with the transcript's words (the message is the reason)."""


class _Voice(ctypes.Structure):
    """The head of ``cst_voice`` (cst_voice.h)."""

    _fields_ = [("name", ctypes.c_char_p), ("features", ctypes.c_void_p), ("ffunctions", ctypes.c_void_p)]


class _Wave(ctypes.Structure):
    """``cst_wave`` (cst_wave.h)."""

    _fields_ = [("type", ctypes.c_char_p), ("sample_rate", ctypes.c_int), ("num_samples", ctypes.c_int),
                ("num_channels", ctypes.c_int), ("samples", ctypes.POINTER(ctypes.c_short))]


@dataclass
class Spoken:
    """One synthesized sentence: ``wav`` int16 at ``rate``; ``segments`` [(end time in seconds,
    phone)] in order (Festival's ``utt.save.segs`` content, what ``flite -psdur`` prints);
    ``words`` [(start, end in seconds, flite's word)], each spanning its segments exactly."""

    wav: np.ndarray
    rate: int
    segments: list[tuple[float, str]]
    words: list[tuple[float, float, str]]


class Flite:
    """The flite library with its two offered voices, registered when first used."""

    def __init__(self) -> None:
        lib = self.lib = ctypes.CDLL(LIBRARY)
        P, S, F = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_float
        for name, res, args in [
            ("flite_synth_text", P, [S, P]), ("utt_relation", P, [P, S]), ("relation_head", P, [P]),
            ("item_next", P, [P]), ("item_as", P, [P, S]), ("path_to_item", P, [P, S]),
            ("item_feat_string", S, [P, S]), ("item_feat_float", F, [P, S]), ("utt_wave", P, [P]),
            ("delete_utterance", None, [P]), ("feat_set_float", None, [P, S, F]), ("feat_remove", ctypes.c_int, [P, S]),
        ]:
            getattr(lib, name).restype = res
            getattr(lib, name).argtypes = args
        lib.flite_init()
        self.libc = ctypes.CDLL(None)
        self._voices: dict[str, int] = {}
        self._voice: int | None = None

    def set_voice(self, name: str, stretch: float = 1.0, f0_mean: float | None = None) -> None:
        """A voice of ``VOICES`` with its tempo (``duration_stretch``, > 1 slower) and, for a voice
        that honours it, its target F0 mean in Hz (None: the voice's own)."""
        if name not in VOICES:
            raise ValueError(f"flite voice {name!r}: offered are {', '.join(VOICES)}")
        if f0_mean is not None and not VOICES[name]:
            raise ValueError(f"flite voice {name!r} ignores a target F0 mean: give None")
        if name not in self._voices:
            reg = getattr(ctypes.CDLL(voice_library(name)), f"register_cmu_us_{name}")
            reg.restype, reg.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
            self._voices[name] = reg(None)
        v = self._voices[name]
        feats = ctypes.cast(v, ctypes.POINTER(_Voice)).contents.features
        self.lib.feat_set_float(feats, DURATION_STRETCH, stretch)
        if f0_mean is None:
            self.lib.feat_remove(feats, F0_MEAN)
        else:
            self.lib.feat_set_float(feats, F0_MEAN, f0_mean)
        self._voice = v

    def say(self, text: str) -> Spoken:
        """Synthesize ``text`` with the voice set last; raises SkipUtterance when a word has no
        segment."""
        if self._voice is None:
            raise RuntimeError("set_voice first")
        lib = self.lib
        self.libc.srand(1)  # module docstring: the program's audio, whatever came before
        utt = lib.flite_synth_text(text.encode(), self._voice)
        if not utt:
            raise RuntimeError(f"flite_synth_text failed on {text!r}")
        try:
            index, segments = {}, []
            item = lib.relation_head(lib.utt_relation(utt, b"Segment"))
            while item:
                index[item] = len(segments)
                segments.append((lib.item_feat_float(item, b"end"), lib.item_feat_string(item, b"name").decode()))
                item = lib.item_next(item)
            words = []
            item = lib.relation_head(lib.utt_relation(utt, b"Word"))
            while item:
                name = lib.item_feat_string(item, b"name").decode()
                ends = []
                for path in (b"R:SylStructure.daughter1.daughter1", b"R:SylStructure.daughtern.daughtern"):
                    seg = lib.path_to_item(item, path)
                    seg = lib.item_as(seg, b"Segment") if seg else None
                    ends.append(index.get(seg))
                first, last = ends
                if first is None or last is None or last < first:
                    raise SkipUtterance("flite_word_without_phones")
                start = segments[first - 1][0] if first else 0.0
                words.append((start, segments[last][0], name))
                item = lib.item_next(item)
            w = ctypes.cast(lib.utt_wave(utt), ctypes.POINTER(_Wave)).contents
            if w.num_channels != 1 or w.num_samples <= 0:
                raise RuntimeError(f"flite wrote {w.num_samples} samples in {w.num_channels} channels for {text!r}")
            wav = np.ctypeslib.as_array(w.samples, shape=(w.num_samples,)).copy()
            rate = w.sample_rate
        finally:
            lib.delete_utterance(utt)
        if not segments:
            raise SkipUtterance("flite_no_phones")
        return Spoken(wav=wav, rate=rate, segments=segments, words=words)


def version() -> str:
    """The flite program's version line (``flite --version``), or the library's name."""
    import shutil
    import subprocess

    if shutil.which("flite"):
        out = subprocess.run(["flite", "--version"], capture_output=True, text=True).stdout
        line = [ln.strip() for ln in out.splitlines() if "version" in ln]
        if line:
            return line[0]
    return LIBRARY
