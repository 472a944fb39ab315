"""The one speech reader: an audio file in TIMIT layout -> a labelled, featurized ``Utterance``.

TIMIT keeps an utterance's files side by side: ``<utt>.wav`` (or .flac, .WAV, any format the
audio reader reads), ``<utt>.phn`` (the phone alignment), ``<utt>.wrd`` (time-aligned words)
and ``<utt>.txt`` (the sentence). ``SpeechReader.read`` finds them beside the audio, reads the
audio, featurizes it, labels each frame from the .phn (the frame-centre rule, ``alignment.py``)
and keeps the segments, words and sentence the reports score; everything an utterance is, in
one call. The alignment may instead be a Praat TextGrid (the Montreal Forced Aligner's), a
Kaldi CTM or a Buckeye ``.phones`` file (``alignment_reader.py``, chosen by ``AlignmentSource``). ``read_vocabulary`` and ``read_sentences`` read the .wrd and .txt of a whole split
(what the training split says, without its audio).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from vecset.encoders.speech.alignment import Segment, frame_labels, read_phn
from vecset.encoders.speech.alignment_reader import AlignmentReader, AlignmentSource
from vecset.encoders.speech.audio import audio_extensions, read_audio
from vecset.encoders.speech.features import Featurizer, featurize
from vecset.encoders.speech.phones import PhoneSet, phone_names
from vecset.encoders.speech.streaming import Recording, recording_info
from vecset.encoders.speech.transcripts import Word, normalise_sentence, read_txt, read_wrd

# TIMIT's alignment and transcript files beside each utterance, and the other alignment formats'
# (TextGrid, Buckeye .phones / .words, Kaldi CTM); compared lower-cased
COMPANION_EXTS = (".phn", ".wrd", ".txt", ".textgrid", ".phones", ".words", ".ctm")
# a kept waveform is 16-bit sample values (half the memory of float32; exact for 16-bit files at
# 16 kHz: the audio reader gives value / 32768)
INT16_SCALE = 32768.0


def find_audio(stem: Path) -> Path | None:
    """``stem`` + an audio extension (``audio_extensions``, .wav and .flac first) in any letter
    case (real TIMIT has .WAV)."""
    for ext in audio_extensions():
        for e in (ext, ext.upper()):
            if stem.with_suffix(e).exists():
                return stem.with_suffix(e)
    return None


def find_companion(audio: Path, ext: str) -> Path | None:
    """The file beside ``audio`` with extension ``ext`` (.phn, .wrd, .txt) in either case."""
    for e in (ext.lower(), ext.upper()):
        if audio.with_suffix(e).exists():
            return audio.with_suffix(e)
    return None


def to_int16(wav: np.ndarray) -> Tensor:
    """(n,) float in [-1, 1] -> (n,) int16 sample values."""
    return torch.from_numpy(np.clip(np.round(wav * INT16_SCALE), -32768, 32767).astype(np.int16))


@dataclass(frozen=True)
class AudioFile:
    """What an input file is: its path, its own rate and length (a .phn counts these samples)
    and its frame count at 16 kHz."""

    path: Path
    sample_rate: int
    samples: int
    frames: int


@dataclass(frozen=True)
class Utterance:
    """One utterance read by ``SpeechReader.read``.

    Fields: ``id`` (the data module's sample id), ``path`` (the audio file), ``x`` the frames,
    ``sample_rate`` and ``samples`` the audio file's own; for a labelled utterance ``y`` the
    frame labels, ``segments`` (its .phn), ``ignored`` (frames without a class: uncovered by a
    segment, or TIMIT's q under 39-folding), ``words`` (its .wrd; None without one) with the
    ``zero_length_words`` left out (their ``file:line``), ``transcript`` (its .txt's sentence;
    None without one); ``wav`` the 16 kHz waveform as int16 when kept for augmentation.

    Shapes:
        x (T, F) float; y (T,) long; wav (n,) int16 at 16 kHz.
    """

    id: int
    path: Path
    x: Tensor
    sample_rate: int
    samples: int
    y: Tensor | None = None
    segments: list[Segment] | None = None
    ignored: int = 0
    words: list[Word] | None = None
    zero_length_words: list[str] = field(default_factory=list)
    transcript: str | None = None
    wav: Tensor | None = None
    # the alignment's format (phn, textgrid, ctm, buckeye) and what its label mapping did (counts)
    alignment_format: str | None = None
    mapped_labels: dict[str, int] = field(default_factory=dict)

    @property
    def file(self) -> AudioFile:
        return AudioFile(self.path, self.sample_rate, self.samples, len(self.x))


class SpeechReader:
    """Reads utterances with one featurizer and one phone set.

    Args:
        phone_set: ``festival``, ``timit61`` or ``timit39`` (the labels' names, ``class_names``;
            ``timit39`` folds a 61-phone .phn while reading it).
        featurizer: the frames' features (default: 40 log-mel bins).
        alignments: where the phone and word alignments are and in which format (default: the
            one file beside the audio, .phn, .TextGrid or .phones).

    Shapes:
        an audio file of n samples at 16 kHz -> x (T, F), T = 1 + (n - 400) // 160.
    """

    def __init__(self, phone_set: PhoneSet = "festival", featurizer: Featurizer | None = None,
                 alignments: AlignmentSource | None = None) -> None:
        self.phone_set = phone_set
        self.class_names = phone_names(phone_set)
        self.featurizer = featurizer if featurizer is not None else Featurizer()
        self.alignments = AlignmentReader(alignments or AlignmentSource(), phone_set)

    def read(self, audio: Path, uid: int, labelled: bool = True, keep_wave: bool = False) -> Utterance:
        """The utterance of ``audio``: features, and with ``labelled`` its alignment's frame labels
        and segments (its .phn, TextGrid, CTM rows or .phones: ``alignment_reader.py``; none is
        an error naming the file), its words (the alignment's word tier, word CTM or Buckeye
        .words, else its .wrd) and its .txt's sentence where they exist; with ``keep_wave`` also
        its 16 kHz waveform."""
        audio = Path(audio)
        a = read_audio(audio)
        x = featurize(self.featurizer, torch.from_numpy(a.wav), audio)  # (T, F)
        wav = to_int16(a.wav) if keep_wave else None
        if not labelled:
            return Utterance(uid, audio, x, a.file_rate, a.file_samples, wav=wav)
        fmt, path = self.alignments.find(audio)
        zero: list[str] = []  # only the word scores read the words: a word without time is left out, counted
        mapped: dict[str, int] = {}
        if fmt == "phn":
            segs = read_phn(path, a.file_samples, self.class_names, fold39=self.phone_set == "timit39",
                            sample_rate=a.file_rate, audio=audio)
            words = None
        else:
            al = self.alignments.read(audio, a.file_samples, a.file_rate, fmt, path)
            segs, words, zero, mapped = al.segments, al.words, al.zero_length_words, dict(al.mapped)
        y, ignored = frame_labels(segs, len(x), self.class_names, sample_rate=a.file_rate)
        wrd, txt = find_companion(audio, ".wrd"), find_companion(audio, ".txt")
        if words is None and wrd is not None:  # a .wrd beside the audio, where the alignment has no words
            words = read_wrd(wrd, zero)
        return Utterance(uid, audio, x, a.file_rate, a.file_samples, torch.from_numpy(y), segs, ignored, words, zero,
                         read_txt(txt) if txt is not None else None, wav, fmt, mapped)

    def words(self, audio: Path, zero_length: list[str]) -> list[Word] | None:
        """``audio``'s words without reading the audio (the vocabulary of a split): its .wrd, or
        the word tier / word CTM / Buckeye .words of its alignment; None without any."""
        fmt, path = self.alignments.find(audio)
        if fmt != "phn":
            rec = recording_info(audio)  # the header: the alignment's checks need the file's length
            al = self.alignments.read(audio, rec.file_samples, rec.file_rate, fmt, path)
            if al.words is not None:
                zero_length += al.zero_length_words
                return al.words
        wrd = find_companion(audio, ".wrd")
        return read_wrd(wrd, zero_length) if wrd is not None else None

    def header(self, audio: Path) -> Recording:
        """What ``audio``'s header says (rate, length, format): a long recording read in blocks later."""
        return recording_info(audio)


def read_vocabulary(files: list[Path], reader: SpeechReader | None = None) -> tuple[set[str], int, list[str]] | None:
    """The case-folded words of the ``.wrd`` files beside ``files`` (with ``reader``: of their
    alignments' words, ``SpeechReader.words``), how many of the files have none, and the lines
    (file:line) of zero-length words, which are left out; None when none of them has words."""
    words, missing, zero = set(), 0, []
    for audio in files:
        if reader is not None:
            found = reader.words(audio, zero)
        else:
            wrd = find_companion(audio, ".wrd")
            found = read_wrd(wrd, zero) if wrd is not None else None
        if found is None:
            missing += 1
            continue
        words |= {w.word.casefold() for w in found}
    return (words, missing, zero) if words else None


def read_sentences(files: list[Path]) -> dict[str, list[Path]]:
    """Normalised sentence (``normalise_sentence`` of the ``.txt``) -> the files that say it;
    files without a ``.txt`` are left out."""
    out: dict[str, list[Path]] = {}
    for audio in files:
        if (txt := find_companion(audio, ".txt")) is not None:
            out.setdefault(normalise_sentence(read_txt(txt)), []).append(audio)
    return out
