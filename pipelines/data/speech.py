"""SpeechFramesDataModule: frame labeling (one phone per 10 ms frame) on TIMIT-layout folders.

The shipped corpus is ``data/speech`` (Festival-synthesized, see ``scripts/make_speech_corpus.py``
and data/README.md); real TIMIT or any folder of ``<speaker>/<utt>.wav`` + ``<utt>.phn`` works
the same way. Features and labels are computed once in ``setup`` and kept in memory.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler, Sampler, SequentialSampler

from vecset.backbone.data_spec import DataSpec
from vecset.encoders.collate import pad_sets
from vecset.encoders.speech import (
    Featurizer,
    PhoneSet,
    Recording,
    audio_extensions,
    frame_labels,
    frames_stats,
    normalise_sentence,
    phone_names,
    read_audio,
    read_frames,
    read_phn,
    read_txt,
    read_wrd,
    recording_info,
    recording_stats,
)
from vecset.heads.segment_decoder import SegmentDecoder
from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.data.speech_predictions import SpeechPredictionFiles
from vecset.pipelines.data.speech_utterances import (
    AugmentedUtterances,
    EpochKeys,
    SpeechUtterances,
    featurize,
    to_int16,
    wave_augment,
)

log = logging.getLogger(__name__)

# TIMIT's alignment and transcript files beside each utterance: skipping them is expected
COMPANION_EXTS = (".phn", ".wrd", ".txt")


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


def find_phn(audio: Path) -> Path | None:
    return find_companion(audio, ".phn")


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
    extension, one per line) or as a folder under ``root`` searched recursively."""
    p = root / spec
    if p.is_dir():
        return scan_audio(p)
    if not p.is_file():
        raise ValueError(f"{p}: split '{spec}' is neither a list file nor a folder under {root}")
    files = []
    for ln, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        stem = root / line.strip()
        audio = stem if stem.suffix.lower() in audio_extensions() and stem.exists() else find_audio(stem)
        if audio is None:
            raise ValueError(f"{p}:{ln}: no audio file {stem}.wav, {stem}.flac or another audio extension "
                             f"({' '.join(audio_extensions())})")
        files.append(audio)
    return files


def crop_utterances(items: list[dict], max_frames: int) -> tuple[list[dict], int, int]:
    """Each utterance cut to its first ``max_frames`` frames (features and labels): the new
    items, how many were cut and how many frames they lost."""
    out, cut, dropped = [], 0, 0
    for it in items:
        T = len(it["x"])
        if T > max_frames:
            cut, dropped = cut + 1, dropped + T - max_frames
            it = {**it, "x": it["x"][:max_frames], "y": None if it["y"] is None else it["y"][:max_frames]}
        out.append(it)
    return out, cut, dropped


@dataclass(frozen=True)
class Chunk:
    """Frames [lo, hi) of recording ``sid`` are read and run through the model; the
    predictions of its core [start, end) are kept (lo <= start < end <= hi; the rest is
    context: at least the model's receptive field, except at the recording's ends)."""

    sid: int
    lo: int
    hi: int
    start: int
    end: int
    chunks: int  # how many chunks its recording has


def plan_chunks(sid: int, frames: int, chunk: int, context: int) -> list[Chunk]:
    """Cores of ``chunk`` frames (the last one shorter) with ``context`` frames on each side."""
    cores = [(s, min(frames, s + chunk)) for s in range(0, frames, chunk)]
    return [Chunk(sid, max(0, s - context), min(frames, e + context), s, e, len(cores)) for s, e in cores]


class SpeechChunks(Dataset):
    """Chunks of the recordings ``vecset predict`` reads, featurized when asked for:
    ``{"x": (hi - lo, F), "id": sid, "offset": lo, "keep": (start - lo, end - lo)}``, plus
    ``"stats"`` (2, F), the whole recording's mean and deviation, when the model normalizes per
    recording and the recording has several chunks (one streaming pass per recording, cached
    until the next recording). A recording not at 16 kHz was featurized whole at setup
    (``whole``: resampling in blocks would not equal resampling whole)."""

    def __init__(self, chunks: list[Chunk], recordings: dict[int, Recording], whole: dict[int, torch.Tensor],
                 featurizer: Featurizer, stats: bool, block_frames: int) -> None:
        self.chunks, self.recordings, self.whole = chunks, recordings, whole
        self.featurizer, self.stats, self.block_frames = featurizer, stats, block_frames
        self._stats: tuple[int, torch.Tensor] | None = None

    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, i: int) -> dict:
        c = self.chunks[i]
        x = self.whole[c.sid] if c.sid in self.whole else read_frames(self.recordings[c.sid], c.lo, c.hi,
                                                                     self.featurizer)
        item = {"x": x, "id": c.sid, "offset": c.lo, "keep": (c.start - c.lo, c.end - c.lo)}
        if self.stats and c.chunks > 1:
            if self._stats is None or self._stats[0] != c.sid:
                mean, std = recording_stats(self.recordings[c.sid], self.featurizer, self.block_frames)
                self._stats = (c.sid, torch.stack([mean, std]))
            item["stats"] = self._stats[1]
        return item


class ChunkBatches(Sampler[list[int]]):
    """Consecutive chunks, at most ``batch_size`` of them and ``budget`` frames together (a
    longer chunk alone), in order: a batch's memory is bounded whatever the recordings' lengths."""

    def __init__(self, lengths: list[int], budget: int, batch_size: int) -> None:
        self.batches: list[list[int]] = []
        cur, frames = [], 0
        for i, n in enumerate(lengths):
            if cur and (frames + n > budget or len(cur) == batch_size):
                self.batches.append(cur)
                cur, frames = [], 0
            cur.append(i)
            frames += n
        if cur:
            self.batches.append(cur)

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


def collate_chunks(items: list[dict]) -> dict:
    """``pad_sets`` plus ``offsets`` (B,), ``keep`` (B, 2) and, when any chunk carries its
    recording's statistics, ``utterance_mean`` / ``utterance_std`` (B, F) for every item (a
    one-chunk recording's own, from its frames)."""
    batch = pad_sets(items)
    batch["offsets"] = torch.tensor([it["offset"] for it in items])
    batch["keep"] = torch.tensor([it["keep"] for it in items])
    if any("stats" in it for it in items):
        stats = [it["stats"] if "stats" in it else torch.stack(frames_stats(it["x"])) for it in items]
        batch["utterance_mean"] = torch.stack([s[0] for s in stats])  # (B, F)
        batch["utterance_std"] = torch.stack([s[1] for s in stats])
    return batch


class SpeechFramesDataModule(VecsetDataModule):
    """Frame labeling on a TIMIT-layout corpus.

    Args:
        root: corpus folder (``data/speech`` is shipped).
        train, val, test: each split as a list file of utterance paths relative to ``root``
            (``train.lst``...) or a folder under ``root`` (real TIMIT: ``TRAIN``, ``TEST``).
        phone_set: ``festival`` (radio phones + pau + h#), ``timit61``, or ``timit39`` (the
            Lee & Hon folding of either set; TIMIT's ``q`` frames are ignored and counted).
        features: ``fbank`` or ``mfcc``; num_mel_bins: 40 or 80; num_ceps: MFCC width.
        batch_size: utterances per batch.
        predict_paths: audio files or folders for ``vecset predict`` (no .phn needed);
            default: the test split.
        predict_chunk_frames: ``vecset predict`` reads, featurizes and runs each file in
            chunks of this many frames (2000: 20 s) with the model's receptive field as context
            on each side, so memory does not grow with the file's length and the output equals
            the whole file's (docs/speech.md); 0 reads each file whole.
        max_utterances: keep only the first n utterances of each split (quick runs; 0 = all).
        plot_utterances: test utterances drawn with true and predicted segments after test
            (0: no segments and no attention picture).
        predict_segments: what ``vecset predict``'s ``.phn`` files hold: ``decoder``, the head's
            segment decoder's segments (the argmax runs when the head has none), or ``argmax``,
            the runs of the per-frame argmax labels merged.
        fit_max_frames: if > 0, training and validation utterances longer than this many
            frames (10 ms each) are cut to their first ``fit_max_frames`` frames, labels with
            them (their segments and words, which only the test reports read, stay whole); the
            cut utterances and frames are counted and logged. The test split keeps
            its full lengths: a length-generalization study trains on short inputs and tests on
            long ones (``bench/ablations.py``).
        speed_factors: training only: speed perturbation, a factor drawn uniformly per utterance
            and epoch from this list (e.g. [0.9, 1.0, 1.1]; each in [0.5, 2.0], ``16000 * f`` a
            whole number of Hz); None: none. See ``encoders/speech/augment.py``.
        noise_snr_db: training only: white noise at an SNR drawn uniformly from [low, high] dB
            (finite, in [-20, 100]) on a ``noise_prob`` share of the draws; None: none.
        augment_seed: with (epoch, index) seeds each draw (``speech_utterances.py``).
        With ``speed_factors`` or ``noise_snr_db`` set, the training waveforms are kept (int16)
        and each training item is perturbed, featurized and labelled when drawn; the global
        normalization statistics still come from the plain training frames. Validation and test
        are never augmented. SpecAugment (masking) is the encoder's (``SpeechEncoder``).
    """

    def __init__(self, root: str = "data/speech", train: str = "train.lst", val: str = "dev.lst",
                 test: str = "test.lst", phone_set: PhoneSet = "festival",
                 features: str = "fbank", num_mel_bins: int = 40, num_ceps: int = 13,
                 batch_size: int = 8, predict_paths: list[str] | None = None, predict_chunk_frames: int = 2000,
                 max_utterances: int = 0, plot_utterances: int = 3, num_workers: int = 0,
                 predict_segments: Literal["decoder", "argmax"] = "decoder", fit_max_frames: int = 0,
                 speed_factors: list[float] | None = None, noise_snr_db: list[float] | None = None,
                 noise_prob: float = 0.5, augment_seed: int = 0) -> None:
        super().__init__()
        if fit_max_frames < 0:
            raise ValueError(f"fit_max_frames must be >= 0 (0: full lengths), got {fit_max_frames}")
        self.fit_max_frames = fit_max_frames
        self.root = Path(root)
        self.split_specs = {"train": train, "val": val, "test": test}
        self.phone_set = phone_set
        self.class_names = phone_names(phone_set)
        self.featurizer = Featurizer(features, num_mel_bins, num_ceps)  # type: ignore[arg-type]
        self.batch_size, self.num_workers = batch_size, num_workers
        self.predict_paths = predict_paths
        if predict_chunk_frames < 0:
            raise ValueError(f"predict_chunk_frames must be >= 0 (0: whole files), got {predict_chunk_frames}")
        self.predict_chunk_frames = predict_chunk_frames
        # from the model before predict (predict_context): None = unbounded or not told
        self.context: int | None = None
        self.decoder: SegmentDecoder | None = None  # the head's, from predict_context
        self.utterance_stats = False
        self.recordings: dict[int, Recording] = {}  # predict files read in chunks
        self.whole: dict[int, torch.Tensor] = {}  # predict files featurized whole at setup
        self.n_frames: dict[int, int] = {}
        self._files: SpeechPredictionFiles | None = None
        self.max_utterances, self.plot_utterances = max_utterances, plot_utterances
        if predict_segments not in ("decoder", "argmax"):
            raise ValueError(f"predict_segments must be 'decoder' or 'argmax', got {predict_segments!r}")
        self.predict_segments = predict_segments
        self.wave_augment = wave_augment(speed_factors, noise_snr_db, noise_prob)
        self.augment_seed = augment_seed
        if self.wave_augment is not None and fit_max_frames:
            # an augmented draw is featurized from the whole waveform, which the crop does not cut
            raise ValueError("fit_max_frames cannot be combined with speed_factors / noise_snr_db (the augmented "
                             "training draws are featurized from whole waveforms); set one of them")
        self.sets: dict[str, SpeechUtterances] = {}
        self.paths: dict[int, Path] = {}  # sample id -> audio file
        # sample id -> the audio file's own length and rate (its .phn counts these samples)
        self.n_samples: dict[int, int] = {}
        self.sample_rates: dict[int, int] = {}
        self._next_id = 0
        # per split, its utterances whose sentence a training utterance says too (set up once)
        self.shared_sentences: dict[str, int] | None = None
        # per split, the .wrd lines (file:line) of zero-length words, left out of the word scores
        self.zero_length_words: dict[str, list[str]] = {}

    # -- reading ---------------------------------------------------------------------------
    def load_utterance(self, audio: Path, labelled: bool = True, keep_wave: bool = False) -> dict:
        """Features, labels, segments and words of one utterance; with ``keep_wave`` also its
        16 kHz waveform (``wav``, int16) and ``file_rate``, for augmentation."""
        a = read_audio(audio)
        feats = featurize(self.featurizer, torch.from_numpy(a.wav), audio)  # (T, F)
        T = len(feats)
        sid = self._next_id
        self._next_id += 1
        self.paths[sid], self.n_samples[sid], self.sample_rates[sid] = audio, a.file_samples, a.file_rate
        self.n_frames[sid] = T
        item = {"x": feats, "id": sid, "y": None, "ignored": 0}
        if keep_wave:
            item["wav"], item["file_rate"] = to_int16(a.wav), a.file_rate
        if labelled:
            phn = find_phn(audio)
            if phn is None:
                raise ValueError(f"{audio}: no {audio.with_suffix('.phn').name} next to it; every training, "
                                 "validation and test utterance needs its phone alignment")
            segs = read_phn(phn, a.file_samples, self.class_names, fold39=self.phone_set == "timit39",
                            sample_rate=a.file_rate, audio=audio)
            y, ignored = frame_labels(segs, T, self.class_names, sample_rate=a.file_rate)
            item["y"], item["ignored"] = torch.from_numpy(y), ignored
            # kept for the segment and word scores of the test report (pipelines/reports/speech.py)
            item["segments"] = segs
            wrd = find_companion(audio, ".wrd")
            # only the word scores read the words: a word without time is left out and counted
            item["zero_length_words"] = []
            item["words"] = read_wrd(wrd, item["zero_length_words"]) if wrd is not None else None
        return item

    def split_files(self, split: str) -> list[Path]:
        """The audio files of a split (the first ``max_utterances`` when set)."""
        files = list_audio(self.root, self.split_specs[split])
        return files[: self.max_utterances] if self.max_utterances else files

    def load_split(self, split: str) -> SpeechUtterances:
        files = self.split_files(split)
        augment = split == "train" and self.wave_augment is not None
        items = [self.load_utterance(f, keep_wave=augment) for f in files]
        ignored = sum(it["ignored"] for it in items)
        frames = sum(len(it["x"]) for it in items)
        msg = f"speech {split}: {len(items)} utterances, {frames} frames from {self.root / self.split_specs[split]}"
        if self.fit_max_frames and split in ("train", "val"):
            items, cut, dropped = crop_utterances(items, self.fit_max_frames)
            msg += (f"; fit_max_frames={self.fit_max_frames}: {cut} utterances cut to their first "
                    f"{self.fit_max_frames} frames ({dropped} frames left out)")
        if ignored:
            msg += f"; {ignored} frames without a class (not covered by a segment, or q) are ignored"
        log.info(msg)
        if ignored or self.fit_max_frames:
            print(msg)
        zero = [z for it in items for z in it.get("zero_length_words", [])]
        self.zero_length_words[split] = zero
        if zero:
            print(f"speech {split}: {len(zero)} zero-length word{'s' if len(zero) > 1 else ''} (end = start) left out "
                  f"of the word scores: {', '.join(zero[:5])}{', ...' if len(zero) > 5 else ''}")
        if augment:
            log.info("speech train: augmented at every draw (speed factors %s, noise SNR %s dB on %.0f%% of draws)",
                     self.wave_augment.speed_factors, self.wave_augment.snr_db, 100 * self.wave_augment.noise_prob)
            return AugmentedUtterances(items, self.wave_augment, self.featurizer, self.class_names, self.augment_seed)
        return SpeechUtterances(items)

    def split_vocabulary(self, split: str) -> tuple[set[str], int, list[str]] | None:
        """The case-folded words of a split's ``.wrd`` files, how many of its utterances have
        none, and the lines (file:line) of its zero-length words, which are left out; None when
        the split cannot be listed or none of its utterances has a ``.wrd``."""
        if not (self.root / self.split_specs[split]).exists():
            return None
        words, missing, zero = set(), 0, []
        for audio in self.split_files(split):
            wrd = find_companion(audio, ".wrd")
            if wrd is None:
                missing += 1
                continue
            words |= {w.word.casefold() for w in read_wrd(wrd, zero)}
        return (words, missing, zero) if words else None

    def split_sentences(self, split: str) -> dict[str, list[Path]]:
        """Normalised sentence (``normalise_sentence`` of the ``.txt``) -> the split's utterances
        that say it; utterances without a ``.txt`` are left out."""
        out: dict[str, list[Path]] = {}
        for audio in self.split_files(split):
            if (txt := find_companion(audio, ".txt")) is not None:
                out.setdefault(normalise_sentence(read_txt(txt)), []).append(audio)
        return out

    def check_shared_sentences(self) -> dict[str, int]:
        """Warn when a validation or test utterance says a sentence that a training utterance
        says too (its ``.txt``, compared after ``normalise_sentence``): a model can memorise a
        sentence's words, so such a score is not one on new sentences. Returns, per split, the
        number of its utterances that share a sentence with training (``shared_sentences``)."""
        specs = {sp: self.root / self.split_specs[sp] for sp in ("train", "val", "test")}
        if not all(p.exists() for p in specs.values()):
            log.info("speech: a split list is missing (%s): no check for sentences shared with training",
                     ", ".join(str(p) for p in specs.values() if not p.exists()))
            return {}
        train = self.split_sentences("train")
        if not train:
            log.info("speech: no .txt transcripts beside the training utterances: no check for shared sentences")
            return {}
        shared = {}
        for split in ("val", "test"):
            if split == "val" and self.split_specs["val"] == self.split_specs["test"]:
                sentences = {}  # the same files: said once, for test
            else:
                sentences = self.split_sentences(split)
            common = sorted(set(sentences) & set(train))
            shared[split] = sum(len(sentences[t]) for t in common)
            if common:
                total = sum(len(v) for v in sentences.values())
                examples = "; ".join(f"{sentences[t][0].relative_to(self.root)} and {train[t][0].relative_to(self.root)}: "
                                     f"{t[:60]!r}" for t in common[:3])
                log.warning("speech: %d of the %d %s utterances with a .txt (%d distinct sentences) say a sentence "
                            "that a training utterance says too (compared without case, punctuation and extra "
                            "whitespace): the %s score is partly one on memorised sentences; e.g. %s",
                            shared[split], total, split, len(common), split, examples)
        return shared

    def speakers(self, split: str) -> set[str]:
        return {self.paths[it["id"]].parent.name for it in self.sets[split].items}

    def setup(self, stage: str | None = None) -> None:
        if stage == "predict" and self.predict_paths:
            if "predict" not in self.sets:
                files = []
                for p in map(Path, self.predict_paths):
                    if p.is_dir():
                        files += scan_audio(p)
                    elif p.exists():
                        files.append(p)
                    else:
                        raise ValueError(f"{p}: predict path does not exist")
                if self.predict_chunk_frames:
                    self.add_recordings(files)
                else:
                    self.sets["predict"] = SpeechUtterances([self.load_utterance(f, labelled=False) for f in files])
            return
        wanted = {"fit": ["train", "val"], "validate": ["val"], "test": ["test"], "predict": ["test"]}.get(
            stage or "", ["train", "val", "test"])
        for split in wanted:
            if split not in self.sets:
                self.sets[split] = self.load_split(split)
        if self.shared_sentences is None:
            self.shared_sentences = self.check_shared_sentences()
        if "train" in self.sets and "test" in self.sets and (shared := self.speakers("train") & self.speakers("test")):
            log.warning("speech: train and test share speakers %s (the split is not speaker-disjoint)", sorted(shared))

    def add_recordings(self, files: list[Path]) -> None:
        """Predict files read in chunks: only their headers now (a file not at 16 kHz is
        featurized whole, as in training)."""
        for f in files:
            rec = recording_info(f)
            if not rec.streamable:
                item = self.load_utterance(f, labelled=False)
                self.whole[item["id"]] = item["x"]
                self.recordings[item["id"]] = rec
                continue
            if rec.frames == 0:
                raise ValueError(f"{f}: {rec.file_samples} samples is shorter than one 25 ms frame")
            sid = self._next_id
            self._next_id += 1
            self.paths[sid], self.n_samples[sid], self.sample_rates[sid] = f, rec.file_samples, rec.file_rate
            self.n_frames[sid] = rec.frames
            self.recordings[sid] = rec
        self.sets["predict"] = SpeechUtterances([])  # predict_split() is "predict"; chunks are planned later

    def predict_context(self, frames: int | None, utterance_stats: bool = False,
                        decoder: SegmentDecoder | None = None) -> None:
        """From the model before predict: its receptive field (frames on each side one output
        depends on; None: every frame), whether it normalizes per recording, and the head's
        segment decoder (each recording's chunks are decoded in order by one stream of it)."""
        self.context, self.utterance_stats, self.decoder = frames, utterance_stats, decoder

    def predict_chunks(self) -> list[Chunk]:
        """Every predict recording cut into chunks; a recording longer than one chunk with a
        model whose output depends on every frame is an error (it cannot be cut exactly)."""
        chunks = []
        for sid, rec in self.recordings.items():
            frames = self.n_frames[sid]
            if sid in self.whole or frames <= self.predict_chunk_frames:
                chunks.append(Chunk(sid, 0, frames, 0, frames, 1))
                continue
            if self.context is None:
                raise ValueError(
                    f"{rec.path}: {frames} frames is longer than predict_chunk_frames={self.predict_chunk_frames}, "
                    "and the model's output at a frame depends on every frame (full attention without a window, "
                    "an LSTM or a pooling head: no finite receptive field), so it cannot be predicted in chunks "
                    "exactly; set --data.predict_chunk_frames 0 to read each file whole (memory grows with its "
                    "length; attention refuses what does not fit), or use truncated attention (window)")
            part = plan_chunks(sid, frames, self.predict_chunk_frames, self.context)
            log.info("%s: %d frames in %d chunks of %d frames, %d frames of context on each side",
                     rec.path, frames, len(part), self.predict_chunk_frames, self.context)
            chunks += part
        return chunks

    def predict_dataloader(self) -> DataLoader:
        """Chunks in order, batched by frames: a batch holds at most ``batch_size`` chunks and
        one chunk's worth of frames (chunk plus context), so its memory does not depend on
        how long the recordings are: a long recording's chunks go one per batch, short files
        are grouped."""
        if not self.recordings:
            return super().predict_dataloader()
        chunks = self.predict_chunks()
        ds = SpeechChunks(chunks, self.recordings, self.whole, self.featurizer, self.utterance_stats,
                          self.predict_chunk_frames)
        budget = self.predict_chunk_frames + 2 * (self.context or 0)
        return DataLoader(ds, batch_sampler=ChunkBatches([c.hi - c.lo for c in chunks], budget, self.batch_size),
                          collate_fn=collate_chunks, num_workers=self.num_workers)

    def data_spec(self, stage: str) -> DataSpec:
        """At fit, the training frames (for a SpeechEncoder with global normalization)."""
        spec = super().data_spec(stage)
        if spec.fit:
            spec = replace(spec, train_frames=[it["x"] for it in self.sets["train"].items])
        return spec

    # -- loaders ---------------------------------------------------------------------------
    collate = staticmethod(pad_sets)

    def _loader(self, split: str, shuffle: bool = False, batch_size: int | None = None) -> DataLoader:
        data = self.sets[split]
        if isinstance(data, AugmentedUtterances):
            # (epoch, index) keys; the order is RandomSampler's, as shuffle=True would draw it
            inner = RandomSampler(data) if shuffle else SequentialSampler(data)
            return DataLoader(data, batch_size=batch_size or self.batch_size, sampler=EpochKeys(inner),
                              collate_fn=self.collate, num_workers=self.num_workers)
        return DataLoader(data, batch_size=batch_size or self.batch_size, shuffle=shuffle,
                          collate_fn=self.collate, num_workers=self.num_workers)

    def predict_split(self) -> str:
        return "predict" if "predict" in self.sets else "test"

    # -- predictions -----------------------------------------------------------------------
    def describe(self, sample_id: int) -> str:
        return str(self.paths[sample_id])

    def prediction_rows(self, ids: list[int], preds: dict) -> list[dict]:
        rows = [{"input": self.describe(sid), "id": sid, "labels": [self.class_names[j] for j in preds["label"][i]],
                 "prob": preds["prob"][i]} for i, sid in enumerate(ids)]
        if self.predict_segments == "decoder" and "segment_label" in preds:
            for i, r in enumerate(rows):  # the head's segment decoder's labels
                r["segment_labels"] = [self.class_names[j] for j in preds["segment_label"][i]]
        return rows

    streams_predictions = True  # the prediction writer hands over each batch (write_prediction_batch)

    def write_prediction_batch(self, ids: list[int], preds: dict, batch: dict, out_dir: Path) -> None:
        """Append one batch's predictions to their files (``SpeechPredictionFiles``); of a
        chunk only its core (``batch["keep"]``), at its place in the recording."""
        if self._files is None:
            self._files = SpeechPredictionFiles(out_dir, self.class_names, self.decoder)
        # the head's segment decoder (``predict_segments: decoder``): for chunks their log-
        # posteriors (the core), decoded in order; for whole files its labels
        use = self.predict_segments == "decoder"
        log_probs, decoded = preds.get("log_prob") if use else None, preds.get("segment_label") if use else None
        for i, sid in enumerate(ids):
            a, b, start = 0, len(preds["label"][i]), 0
            if "keep" in batch:
                a, b = batch["keep"][i].tolist()
                start = int(batch["offsets"][i]) + a
            self._files.add(sid, self.paths[sid], self.n_frames[sid], self.sample_rates[sid], self.n_samples[sid],
                            start, preds["label"][i][a:b], preds["prob"][i][a:b],
                            segment_labels=None if decoded is None else decoded[i],
                            log_probs=None if log_probs is None else log_probs[i][a:b])

    def finish_predictions(self, out_dir: Path) -> Path:
        """Close the run's prediction files; the index predictions.csv."""
        files = self._files or SpeechPredictionFiles(out_dir, self.class_names)
        self._files = None
        return files.close()

    def write_predictions(self, rows: list[dict], out_dir: Path) -> Path:
        """Per input file: ``<name>.frames`` and ``<name>.phn``, plus ``predictions.csv``
        (``SpeechPredictionFiles``), from whole-file rows (``prediction_rows``)."""
        files = SpeechPredictionFiles(out_dir, self.class_names)
        index = {n: j for j, n in enumerate(self.class_names)}
        for r in rows:
            sid, decoded = r["id"], r.get("segment_labels")
            files.add(sid, Path(r["input"]), len(r["labels"]), self.sample_rates[sid], self.n_samples[sid], 0,
                      [index[n] for n in r["labels"]], r["prob"],
                      None if decoded is None else [index[n] for n in decoded])
        return files.close()

    # -- reports after test -----------------------------------------------------------------
    def reports(self) -> list:
        """Per-phone accuracy, the segments of ``plot_utterances`` test utterances and the
        attention over the first one's frames (``pipelines/reports/speech.py``)."""
        from vecset.pipelines.reports.speech import (
            FrameAttentionReport,
            PerPhoneReport,
            SegmentsReport,
        )

        if not self.plot_utterances:
            return [PerPhoneReport()]
        return [PerPhoneReport(), SegmentsReport(self.plot_utterances), FrameAttentionReport()]
