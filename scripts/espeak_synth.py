"""espeak-ng through its C API (ctypes on ``libespeak-ng.so.1``): audio with phone and word timings.

Source: eSpeak NG (Debian packages ``espeak-ng libespeak-ng1``, GPL-3). ``espeak_Initialize`` with
``espeakINITIALIZE_PHONEME_EVENTS`` in synchronous mode makes the synth callback
(``espeak_SetSynthCallback``) receive, with each block of 16-bit audio, the events of that block:
a PHONEME event names each phoneme (espeak's ASCII mnemonic) and gives the sample where it starts;
a WORD event gives the character position of the word it starts. No mbrola voice is needed.

Words exactly the transcript's. espeak's own text analysis merges, splits or expands words (a
hyphenated word is one, a number several), so its words can differ from the transcript's. Here
each transcript word is turned into phonemes on its own (``espeak_TextToPhonemes``) and the
sentence is synthesized from those phonemes (``[[...]]`` input with ``espeakPHONEMES``), one
``[[...]]`` per word, the sentence's punctuation kept between them (its pauses and intonation):
every WORD event then points into one transcript word's ``[[...]]``, so word i's phones are the
phonemes after its WORD events. An utterance is skipped, with a reason, only when a word got no
phoneme at all (``espeak_word_without_phones``).

Noise. The breathy variants (``en-us+f3`` and others with ``breath`` settings) draw their noise
from the C library's ``rand()``, so without care their audio depends on whatever else in the
process called ``rand()`` before (two builds of one corpus with one command once gave different
audio for 60 en-us+f3 files, with the same phones). ``synth`` reseeds it (``srand(1)``) before
each utterance, as scripts/flite_synth.py does; the phone times did not depend on it (a test).
What espeak-ng synthesized before in the same process still moves an utterance's audio and phone
times by a few samples (its own state: the same sentence said twice in a row differed by 12
samples, under 1 ms), the same way for the same sequence of utterances.

``Espeak`` holds the library's global state: one instance per process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

LIBRARY = "libespeak-ng.so.1"
AUDIO_OUTPUT_SYNCHRONOUS = 2
INITIALIZE_PHONEME_EVENTS, INITIALIZE_DONT_EXIT = 0x0001, 0x8000
POS_CHARACTER = 1
CHARS_UTF8, PHONEMES, ENDPAUSE = 0x1, 0x100, 0x1000
EVENT_LIST_TERMINATED, EVENT_WORD, EVENT_END, EVENT_PHONEME = 0, 1, 5, 7
PARAM_RATE, PARAM_PITCH, PARAM_RANGE = 1, 3, 4


class Event(ctypes.Structure):
    """``espeak_EVENT`` (speak_lib.h): ``sample`` is the audio sample the event happens at."""

    _fields_ = [("type", ctypes.c_int), ("unique_identifier", ctypes.c_uint), ("text_position", ctypes.c_int),
                ("length", ctypes.c_int), ("audio_position", ctypes.c_int), ("sample", ctypes.c_int),
                ("user_data", ctypes.c_void_p), ("id", ctypes.c_char * 8)]


CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(Event))


def missing() -> str | None:
    """Why espeak-ng cannot be used here (None: it can)."""
    try:
        ctypes.CDLL(LIBRARY)
    except OSError:
        return f"{LIBRARY} not found: apt-get install espeak-ng libespeak-ng1"
    return None


# words espeak says as a letter name when given alone ("a" -> eI): their in-sentence form
OVERRIDES = {"a": "a#"}


class SkipUtterance(Exception):
    """An utterance espeak could not say with the transcript's words (the message is the reason)."""


@dataclass
class Spoken:
    """One synthesized sentence: ``wav`` int16 at ``rate``; ``phones`` [(start, end, mnemonic)]
    contiguous over [0, len(wav)); ``words`` [(start, end, word)] in the transcript's order."""

    wav: np.ndarray
    rate: int
    phones: list[tuple[int, int, str]]
    words: list[tuple[int, int, str]]
    dropped_zero_length: int = 0
    events: list[tuple[int, int, str]] = field(default_factory=list)


def sentence_tokens(sentence: str) -> list[tuple[str, str]]:
    """(word, punctuation after it) for each word, the words as ``speech_text.words_of`` makes them
    (lower-cased, hyphens split, apostrophes kept)."""
    out: list[tuple[str, str]] = []
    for tok in re.findall(r"[,;:!?.]|[^\s,;:!?.-]+", sentence):
        if tok in ",;:!?.":
            if out:
                out[-1] = (out[-1][0], out[-1][1] + tok)
        else:
            out.append((tok.lower(), ""))
    return out


class Espeak:
    """The espeak-ng library, initialized for synchronous synthesis with phoneme events."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL(LIBRARY)
        self.lib.espeak_Initialize.restype = ctypes.c_int
        self.rate = self.lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, None,
                                               INITIALIZE_PHONEME_EVENTS | INITIALIZE_DONT_EXIT)
        if self.rate <= 0:
            raise RuntimeError(f"espeak_Initialize failed ({self.rate})")
        self._audio: list[np.ndarray] = []
        self._events: list[tuple[int, int, int, str]] = []
        self._cb = CALLBACK(self._callback)  # kept referenced: the library calls it
        self.lib.espeak_SetSynthCallback(self._cb)
        self.lib.espeak_Synth.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int,
                                          ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
        self.lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
        self.lib.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int]
        self.lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        self.libc = ctypes.CDLL(None)  # rand(): module docstring, Noise

    def _callback(self, wav, n, events) -> int:
        if n > 0:
            self._audio.append(np.ctypeslib.as_array(wav, shape=(n,)).copy())
        i = 0
        while events[i].type != EVENT_LIST_TERMINATED:
            e = events[i]
            name = e.id.decode("ascii", "replace") if e.type == EVENT_PHONEME else ""
            self._events.append((e.type, e.text_position, e.sample, name))
            i += 1
        return 0

    def set_voice(self, name: str, rate: int | None = None, pitch: int | None = None,
                  pitch_range: int | None = None) -> None:
        """A voice (``en-us``, a variant ``en-us+f3``) and its rate (words per minute, 80-450),
        pitch and pitch range (0-100); None keeps the voice's default."""
        if self.lib.espeak_SetVoiceByName(name.encode()) != 0:
            raise ValueError(f"espeak-ng has no voice {name!r} (espeak-ng --voices=en lists them)")
        for param, value in ((PARAM_RATE, rate), (PARAM_PITCH, pitch), (PARAM_RANGE, pitch_range)):
            if value is not None:
                self.lib.espeak_SetParameter(param, int(value), 0)

    def phoneme_string(self, word: str, separator: str = "") -> str:
        """espeak's pronunciation of one word in its mnemonics, with stress marks; ``separator``
        (one character) between phonemes."""
        mode = (ord(separator) << 8) if separator else 0
        buf = ctypes.create_string_buffer(word.encode())
        ptr = ctypes.c_char_p(ctypes.addressof(buf))
        parts = []
        while ptr.value:  # one clause per call; the pointer moves on (NULL at the end)
            parts.append(self.lib.espeak_TextToPhonemes(ctypes.byref(ptr), CHARS_UTF8, mode).decode())
        return " ".join(p.strip() for p in parts if p.strip())

    def word_phonemes(self, word: str) -> list[str]:
        """One word's phoneme mnemonics (stress marks kept on the token they precede)."""
        return [t for t in re.split(r"[| ]+", self.phoneme_string(word, "|")) if t]

    def synth(self, text: str, phonemes: bool = False) -> tuple[np.ndarray, list[tuple[int, int, int, str]]]:
        """int16 audio and the events (type, 1-based text position, sample, phoneme name)."""
        self._audio, self._events = [], []
        data = text.encode()
        flags = CHARS_UTF8 | ENDPAUSE | (PHONEMES if phonemes else 0)
        self.libc.srand(1)  # module docstring, Noise: the same noise whatever ran before
        err = self.lib.espeak_Synth(data, len(data) + 1, 0, POS_CHARACTER, 0, flags, None, None)
        if err != 0:
            raise RuntimeError(f"espeak_Synth failed ({err}) on {text!r}")
        self.lib.espeak_Synchronize()
        wav = np.concatenate(self._audio) if self._audio else np.zeros(0, np.int16)
        return wav.astype(np.int16), list(self._events)

    def say(self, sentence: str, lead_s: float = 0.15) -> Spoken:
        """The sentence said word by word from each word's own phonemes (module docstring), after
        ``lead_s`` seconds of digital silence (the utterance-edge h# that Festival's files have)."""
        toks = sentence_tokens(sentence)
        text, spans = "", []
        for w, punct in toks:
            ph = OVERRIDES.get(w) or self.phoneme_string(w)
            if not ph:
                raise SkipUtterance("espeak_word_without_phones")
            start = len(text)
            text += " ".join(f"[[{p}]]" for p in ph.split()) + punct + " "
            spans.append((start + 1, len(text)))  # 1-based text positions of this word's input
        wav, events = self.synth(text, phonemes=True)
        lead = int(round(lead_s * self.rate))
        wav = np.concatenate([np.zeros(lead, np.int16), wav])
        events = [(t, p, s + lead, m) for t, p, s, m in events]
        events.insert(0, (EVENT_PHONEME, 0, 0, "_"))
        n = len(wav)
        phon = [(pos, s, name) for typ, pos, s, name in events if typ == EVENT_PHONEME]
        word_of_pos = {}
        for typ, pos, _, _ in events:
            if typ == EVENT_WORD:
                j = next((j for j, (a, b) in enumerate(spans) if a <= pos <= b), None)
                if j is not None:  # the last WORD event (position 0) starts no word
                    word_of_pos[pos] = j
        segs: list[list] = []  # [start, end, mnemonic, word index or None]
        dropped = 0
        for k, (pos, s, name) in enumerate(phon):
            e = phon[k + 1][1] if k + 1 < len(phon) else n
            s, e = min(s, n), min(e, n)
            if e <= s:
                dropped += 1
                continue
            j = None if name.startswith("_") else word_of_pos.get(pos)
            segs.append([s, e, name, j])
        if not segs:
            raise SkipUtterance("espeak_no_phones")
        segs[0][0] = 0
        segs[-1][1] = n
        for a, b in zip(segs, segs[1:], strict=False):  # contiguous: a dropped phone's time to the one before
            a[1] = b[0]
        words = []
        for j, (w, _) in enumerate(toks):
            mine = [sg for sg in segs if sg[3] == j]
            if not mine:
                raise SkipUtterance("espeak_word_without_phones")
            words.append((mine[0][0], mine[-1][1], w))
        return Spoken(wav=wav, rate=self.rate, phones=[(s, e, m) for s, e, m, _ in segs], words=words,
                      dropped_zero_length=dropped, events=[(p, s, m) for p, s, m in phon])


def to_corpus_phones(spoken: Spoken, out_rate: int, unmapped: Counter) -> tuple[list[list], list[tuple[int, int, str]]]:
    """espeak segments -> Festival-set segments at ``out_rate`` samples: each mnemonic mapped
    (``espeak_phones.MAP``; two phones split the span in half), an unmappable one's time given to
    the phone before it (and counted), neighbouring pauses merged, the edge pauses ``h#``; words
    snapped to the rescaled boundaries."""
    from espeak_phones import MAP, NON_PHONES, strip_mark

    def at(x: int) -> int:
        return int(round(x * out_rate / spoken.rate))

    n = at(len(spoken.wav))
    segs: list[list] = []
    for s, e, m in spoken.phones:
        name = strip_mark(m)
        if name in NON_PHONES:  # a marker event (";"): no phone, its time to the phone before
            if segs:
                segs[-1][1] = at(e)
                continue
            name = "_"
        if name not in MAP:
            unmapped[name] += 1  # UNMAPPABLE (the glottal stop) or a mnemonic MAP lacks
            if segs:
                segs[-1][1] = at(e)
                continue
            phones = ("pau",)
        else:
            phones = MAP[name]
        k = len(phones)
        for i, ph in enumerate(phones):
            a, b = at(s + (e - s) * i // k), at(s + (e - s) * (i + 1) // k)
            if segs and ph == "pau" == segs[-1][2]:
                segs[-1][1] = b
            elif b > a:
                segs.append([a, b, ph])
            elif segs:
                segs[-1][1] = b
    segs = [sg for sg in segs if sg[1] > sg[0]]
    segs[0][0], segs[-1][1] = 0, n
    for a, b in zip(segs, segs[1:], strict=False):
        a[1] = b[0]
    if segs[0][2] == "pau":
        segs[0][2] = "h#"
    if segs[-1][2] == "pau":
        segs[-1][2] = "h#"
    bounds = [0] + [e for _, e, _ in segs]
    words = []
    for s, e, w in spoken.words:
        s_, e_ = (min(bounds, key=lambda b, t=t: abs(b - at(t))) for t in (s, e))
        words.append((s_, e_, w))
    return segs, words
