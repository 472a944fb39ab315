"""CMU Flite through its C library (ctypes on ``libflite.so.1``): audio with phone and word timings.

Source: Flite 2.2 (Black & Lenzo, "Flite: a small fast run-time synthesis engine", ISCA Speech
Synthesis Workshop 2001; Debian packages ``flite libflite1``, BSD-style licence). Its voices
``cmu_us_awb`` (a Scottish English male) and ``cmu_us_rms`` (a US English male) are clustergen
statistical parametric voices: a third way of making speech beside Festival's diphone and HTS
voices and espeak-ng's formant synthesis, and two speakers no other voice of the corpus is.

Timings are Flite's own: ``flite_synth_text`` returns the utterance, whose Segment relation holds
each phone's end time (Festival's radio phone set, the labels the Festival voices give) and whose
Word relation reaches its first and last segment through SylStructure. The wave is the
utterance's 16 kHz audio. So the phone alignment is exact by construction, as for Festival.

Voices left out on purpose: Flite's ``slt``, ``kal`` and ``kal16`` are recordings of the same
speakers as Festival's slt and kal voices (a "held-out" family would share its speaker with a
training one), and ``awb_time`` is a talking-clock voice that says only times of day.

Speaker settings: ``duration_stretch`` (tempo, honoured by both voices) and ``f0_shift`` (a pitch
factor: awb honours it; rms ignores it, measured with librosa's pyin on the same sentence).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

LIBRARY = "libflite.so.1"
VOICES = {"awb": "cmu_us_awb", "rms": "cmu_us_rms"}  # family -> voice library (libflite_<name>.so.1)
REFUSED = {
    "slt": "Flite's slt is a recording of the same speaker as Festival's slt voice",
    "kal": "Flite's kal is a recording of the same speaker as Festival's kal voice",
    "kal16": "Flite's kal16 is a recording of the same speaker as Festival's kal voice",
    "awb_time": "awb_time is a talking-clock voice: it says only times of day",
}
# word start: the end of the segment before its first one; word end: its last segment's end
WORD_START = b"R:SylStructure.daughter1.daughter1.R:Segment.p.end"
WORD_END = b"R:SylStructure.daughtern.daughtern.R:Segment.end"


class _Voice(ctypes.Structure):
    """The head of ``cst_voice`` (cst_voice.h): its name and feature set."""

    _fields_ = [("name", ctypes.c_char_p), ("features", ctypes.c_void_p), ("ffunctions", ctypes.c_void_p)]


class _Wave(ctypes.Structure):
    """``cst_wave`` (cst_wave.h)."""

    _fields_ = [("type", ctypes.c_char_p), ("sample_rate", ctypes.c_int), ("num_samples", ctypes.c_int),
                ("num_channels", ctypes.c_int), ("samples", ctypes.POINTER(ctypes.c_short))]


def check_voice(name: str) -> str:
    """``name`` if it is a voice the corpus may use, else a ValueError saying why not."""
    if name in REFUSED:
        raise ValueError(f"flite:{name}: {REFUSED[name]}; use flite:awb or flite:rms")
    if name not in VOICES:
        raise ValueError(f"flite:{name}: expected flite:awb or flite:rms (Flite's other voices are refused: "
                         + "; ".join(f"{k}: {v}" for k, v in REFUSED.items()) + ")")
    return name


def missing() -> str | None:
    """Why Flite cannot be used here (None: it can)."""
    try:
        ctypes.CDLL(LIBRARY)
        for lib in VOICES.values():
            ctypes.CDLL(f"libflite_{lib}.so.1")
    except OSError as e:
        return f"{e}: apt-get install flite libflite1"
    return None


@dataclass
class Spoken:
    """One synthesized sentence: 16-bit audio at ``rate`` Hz, phones as (end seconds, phone) and
    words as (start seconds, end seconds, word), in Flite's own words (lowercase, a possessive
    ``'s`` as a word of its own, numbers expanded)."""

    wav: np.ndarray  # (n,) int16
    rate: int
    segments: list[tuple[float, str]]
    words: list[tuple[float, float, str]]


class Flite:
    """The library and its voices, loaded once."""

    def __init__(self) -> None:
        why = missing()
        if why:
            raise RuntimeError(why)
        lib = ctypes.CDLL(LIBRARY, mode=ctypes.RTLD_GLOBAL)
        lib.flite_init()
        lib.flite_synth_text.restype = ctypes.c_void_p
        lib.flite_synth_text.argtypes = [ctypes.c_char_p, ctypes.POINTER(_Voice)]
        lib.flite_feat_set_float.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_float]
        lib.utt_relation.restype = ctypes.c_void_p
        lib.utt_relation.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.relation_head.restype = ctypes.c_void_p
        lib.relation_head.argtypes = [ctypes.c_void_p]
        lib.item_next.restype = ctypes.c_void_p
        lib.item_next.argtypes = [ctypes.c_void_p]
        lib.flite_ffeature_string.restype = ctypes.c_char_p
        lib.flite_ffeature_string.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.flite_ffeature_float.restype = ctypes.c_float
        lib.flite_ffeature_float.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.utt_wave.restype = ctypes.POINTER(_Wave)
        lib.utt_wave.argtypes = [ctypes.c_void_p]
        lib.delete_utterance.argtypes = [ctypes.c_void_p]
        self.lib = lib
        self.voices: dict[str, ctypes._Pointer] = {}

    def voice(self, name: str):
        if name not in self.voices:
            lib = VOICES[check_voice(name)]
            vox = ctypes.CDLL(f"libflite_{lib}.so.1", mode=ctypes.RTLD_GLOBAL)
            register = getattr(vox, f"register_{lib}")
            register.restype = ctypes.POINTER(_Voice)
            register.argtypes = [ctypes.c_char_p]
            self.voices[name] = register(None)
        return self.voices[name]

    def _items(self, utt, relation: bytes):
        item = self.lib.relation_head(self.lib.utt_relation(utt, relation))
        while item:
            yield item
            item = self.lib.item_next(item)

    def say(self, text: str, voice: str, stretch: float = 1.0, f0_shift: float = 1.0) -> Spoken:
        v = self.voice(voice)
        self.lib.flite_feat_set_float(v.contents.features, b"duration_stretch", stretch)
        self.lib.flite_feat_set_float(v.contents.features, b"f0_shift", f0_shift)
        utt = self.lib.flite_synth_text(text.encode(), v)
        if not utt:
            raise RuntimeError(f"flite could not synthesize {text!r}")
        try:
            f = self.lib.flite_ffeature_float
            name = self.lib.flite_ffeature_string
            segments = [(float(f(s, b"end")), name(s, b"name").decode()) for s in self._items(utt, b"Segment")]
            words = [(float(f(w, WORD_START)), float(f(w, WORD_END)), name(w, b"name").decode())
                     for w in self._items(utt, b"Word")]
            w = self.lib.utt_wave(utt).contents
            if w.num_channels != 1:
                raise RuntimeError(f"flite wrote {w.num_channels} channels, expected 1")
            wav = np.ctypeslib.as_array(w.samples, shape=(w.num_samples,)).copy()
            return Spoken(wav, int(w.sample_rate), segments, words)
        finally:
            self.lib.delete_utterance(utt)
