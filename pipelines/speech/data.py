"""SpeechFramesDataModule: frame labeling (one phone per 10 ms frame) on TIMIT-layout folders.

The shipped corpus is ``data/speech`` (Festival-synthesized, see ``scripts/make_speech_corpus.py``
and data/README.md); real TIMIT or any folder of ``<speaker>/<utt>.wav`` + ``<utt>.phn`` works
the same way. This module finds a split's audio files (a list file or a folder), calls the
reader (``encoders/speech/reader.py``: audio, features, frame labels, segments, words, one
``Utterance`` each) and batches; features and labels are computed once in ``setup`` and kept in
memory. What the splits share is checked in ``checks.py``; training-time augmentation is
``utterances.py``; ``vecset predict``'s files are ``prediction_files.py``, the chunked reading of
long recordings ``chunks.py``; the default reports ``reports.py`` (all in this folder).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler

from vecset.contracts.data_spec import DataSpec
from vecset.encoders.collate import pad_sets
from vecset.encoders.speech import (
    AlignmentSource,
    AudioFile,
    PhoneSet,
    Recording,
    SpeechReader,
    Utterance,
    read_vocabulary,
)
from vecset.encoders.speech.voice_augment import VoiceAugment
from vecset.pipelines.data.base import ModelLink, VecsetDataModule
from vecset.pipelines.data.batch_augment import BatchAugment, FrameAugment, check_batch_augment
from vecset.pipelines.data.gathered import BucketedCollate, LengthBuckets
from vecset.pipelines.data.options import BucketedPlacement, as_group
from vecset.pipelines.predict.output import PredictModel
from vecset.pipelines.speech.checks import check_shared_speakers, shared_sentences
from vecset.pipelines.speech.chunks import chunk_loader
from vecset.pipelines.speech.device import PAD_LABEL, SpeechDeviceLoader, SpeechPlacement
from vecset.pipelines.speech.files import list_audio, scan_audio
from vecset.pipelines.speech.options import (
    SpeechAugment,
    SpeechFeatures,
    SpeechPredict,
    SpeechSplits,
    feature_count,
    phone_count,
)
from vecset.pipelines.speech.prediction_files import SpeechOutput
from vecset.pipelines.speech.utterances import (
    AugmentedUtterances,
    EpochKeys,
    SpeechUtterances,
    crop_utterances,
    wave_augment,
)
from vecset.shipped import data_file

log = logging.getLogger(__name__)


class SpeechFramesDataModule(VecsetDataModule):
    """Frame labeling on a TIMIT-layout corpus.

    Args:
        root: corpus folder (``data/speech`` is shipped).
        phone_set: ``festival`` (radio phones + pau + h#), ``timit61``, or ``timit39`` (the
            Lee & Hon folding of either set; TIMIT's ``q`` frames are ignored and counted).
            Labels of other alignments are mapped to it (``encoders/speech/alignment_formats.py``:
            ARPAbet stress digits stripped, silences to h#/pau; counted and reported).
        splits: the split lists or folders, a cap on utterances, the training crop
            (``SpeechSplits``).
        features: ``fbank`` or ``mfcc`` and their widths (``SpeechFeatures``); the width is the
            encoder's ``in_dim`` (linked).
        alignment: where each utterance's phone alignment is (``AlignmentSource``): ``format``
            ``auto`` (the one file beside the audio: ``.phn``, ``.TextGrid`` or Buckeye ``.phones``;
            two of them is an error; with ``phone_ctm`` set, the CTM), ``phn``, ``textgrid``, ``ctm``
            or ``buckeye``; a TextGrid's ``phone_tier`` / ``word_tier``; Kaldi CTM files
            ``phone_ctm`` / ``word_ctm`` (relative to ``root`` or absolute), the utterance id being
            the audio file's stem.
        augment: training-time waveform augmentation (``SpeechAugment``): speed, noise, voice.
        batch_augment: transforms of whole training batches on the device, each drawing per
            utterance, e.g. ``batch_augment.SpecAugment`` (masked frames and bands show the
            training frames' per-feature mean); needs ``placement.on_device`` true or auto.
        placement: the splits on the training device (``speech/device.py``: the same batches as
            the classic loader's collate; ``auto``: there when no waveform augmentation runs per
            draw), and length buckets (``BucketedPlacement``).
        predict: what ``vecset predict`` reads and writes (``SpeechPredict``).
        batch_size: utterances per batch.
        num_workers: DataLoader workers.
    """

    # the batch_augment transforms it takes: its batches are frame sequences
    batch_augment_kind = FrameAugment
    predictor = "vecset.pipelines.speech.predictor.SpeechPredictor"

    @classmethod
    def input_paths(cls, init_args: dict[str, Any], subcommand: str | None) -> dict[str, Path]:
        """``root``, and the CTM files (relative to it) where given; a predict of ``predict.paths``
        reads neither."""
        if subcommand == "predict" and (init_args.get("predict") or {}).get("paths"):
            return {}
        root = Path(init_args.get("root") or "data/speech")
        alignment = init_args.get("alignment") or {}
        return {"root": root, **{f"alignment.{k}": root / alignment[k] for k in ("phone_ctm", "word_ctm")
                                 if alignment.get(k)}}

    def __init__(self, root: str = "data/speech", phone_set: PhoneSet = "festival",
                 splits: SpeechSplits = SpeechSplits(), features: SpeechFeatures = SpeechFeatures(),
                 alignment: AlignmentSource = AlignmentSource(), augment: SpeechAugment = SpeechAugment(),
                 batch_augment: list[BatchAugment] | None = None, placement: BucketedPlacement = BucketedPlacement(),
                 predict: SpeechPredict = SpeechPredict(), batch_size: int = 8, num_workers: int = 0) -> None:
        super().__init__()
        splits, features = as_group(SpeechSplits, splits, "splits"), as_group(SpeechFeatures, features, "features")
        alignment, augment = as_group(AlignmentSource, alignment, "alignment"), as_group(SpeechAugment, augment, "augment")
        placement, predict = as_group(BucketedPlacement, placement, "placement"), as_group(SpeechPredict, predict, "predict")
        check_batch_augment(type(self).__name__, self.batch_augment_kind, list(batch_augment or []))
        self.buckets = LengthBuckets(placement.length_buckets)
        self.placement = SpeechPlacement(placement.on_device, placement.device_memory_share, batch_augment,
                                         self.buckets, placement.bucket_batches)
        self.fit_max_frames, self.max_utterances = splits.fit_max_frames, splits.max_utterances
        self.root = data_file(root, "root")
        self.split_specs = {"train": splits.train, "val": splits.val, "test": splits.test}
        self.phone_set = phone_set
        # the one reader: audio, features, frame labels, segments, words (encoders/speech/reader.py)
        ctm = {k: getattr(alignment, k) for k in ("phone_ctm", "word_ctm")}
        alignment = replace(alignment, **{k: None if v is None else self.root / v for k, v in ctm.items()})
        self.reader = SpeechReader(phone_set, features.featurizer(), alignment)
        self.class_names, self.featurizer = self.reader.class_names, self.reader.featurizer
        self.batch_size, self.num_workers = batch_size, num_workers
        self.predict_paths, self.predict_chunk_frames = predict.paths, predict.chunk_frames
        self.predict_segments = predict.segments
        # predict files read in chunks: a 16 kHz file's header (read in blocks later), or a file
        # at another rate read whole now (resampling in blocks would not equal resampling whole)
        self.recordings: dict[int, Recording | Utterance] = {}
        # their loader, planned in prediction_output from the model's receptive field, which the
        # predict side hands over (PredictModel): the data never asks the model
        self.chunk_loader: DataLoader | None = None
        self.wave_augment = wave_augment(augment.speed_factors, augment.noise_snr_db, augment.noise_prob)
        self.voice_augment = None if augment.voice is None else VoiceAugment.from_config(augment.voice)
        self.augment_seed = augment.seed
        if augment.on and placement.on_device is True:
            raise ValueError("placement.on_device: true with augment (speed_factors / noise_snr_db / voice): those "
                             "featurize each draw on the CPU; set on_device: auto or false, or use batch_augment "
                             "(SpecAugment)")
        if augment.on and splits.fit_max_frames:
            # an augmented draw is featurized from the whole waveform, which the crop does not cut
            raise ValueError("splits.fit_max_frames cannot be combined with augment (speed_factors / noise_snr_db / "
                             "voice: the augmented training draws are featurized from whole waveforms); set one")
        self.sets: dict[str, SpeechUtterances] = {}
        # sample id -> its audio file, own rate and length (a .phn counts these samples), frames
        self.files: dict[int, AudioFile] = {}
        self._next_id = 0
        # per split, its utterances whose sentence a training utterance says too (set up once)
        self.shared_sentences: dict[str, int] | None = None
        # per split, the .wrd lines (file:line) of zero-length words, left out of the word scores
        self.zero_length_words: dict[str, list[str]] = {}

    # -- reading ---------------------------------------------------------------------------
    def _new_id(self) -> int:
        sid, self._next_id = self._next_id, self._next_id + 1
        return sid

    def read(self, audio: Path, labelled: bool = True, keep_wave: bool = False) -> Utterance:
        """One utterance through the reader, under a new sample id."""
        u = self.reader.read(audio, self._new_id(), labelled=labelled, keep_wave=keep_wave)
        self.files[u.id] = u.file
        return u

    def audio_file(self, sample_id: int) -> AudioFile:
        """The audio file of a sample of any split (predict files too), with its own rate and
        length and its frame count: what ``vecset predict`` writes its .phn and .frames in."""
        return self.files[sample_id]

    def split_files(self, split: str) -> list[Path]:
        """The audio files of a split (the first ``max_utterances`` when set)."""
        files = list_audio(self.root, self.split_specs[split])
        return files[: self.max_utterances] if self.max_utterances else files

    def load_split(self, split: str) -> SpeechUtterances:
        files = self.split_files(split)
        augment = split == "train" and (self.wave_augment is not None or self.voice_augment is not None)
        items = [self.read(f, keep_wave=augment) for f in files]
        ignored = sum(u.ignored for u in items)
        frames = sum(len(u.x) for u in items)
        msg = f"speech {split}: {len(items)} utterances, {frames} frames from {self.root / self.split_specs[split]}"
        if self.fit_max_frames and split in ("train", "val"):
            items, cut, dropped = crop_utterances(items, self.fit_max_frames)
            msg += (f"; fit_max_frames={self.fit_max_frames}: {cut} utterances cut to their first "
                    f"{self.fit_max_frames} frames ({dropped} frames left out)")
        if ignored:
            msg += f"; {ignored} frames without a class (not covered by a segment, or q) are ignored"
        formats = Counter(u.alignment_format for u in items)
        mapped = sum((Counter(u.mapped_labels) for u in items), Counter())
        if set(formats) != {"phn"}:
            msg += "; alignments: " + ", ".join(f"{n} {f}" for f, n in sorted(formats.items()))
        if mapped:
            msg += "; labels mapped to the phone set: " + ", ".join(f"{n} {k}" for k, n in sorted(mapped.items()))
        log.info(msg)
        if ignored or self.fit_max_frames or mapped:
            print(msg)
        zero = [z for u in items for z in u.zero_length_words]
        self.zero_length_words[split] = zero
        if zero:
            print(f"speech {split}: {len(zero)} zero-length word{'s' if len(zero) > 1 else ''} (end = start) left out "
                  f"of the word scores: {', '.join(zero[:5])}{', ...' if len(zero) > 5 else ''}")
        if augment:
            w, v = self.wave_augment, self.voice_augment
            log.info("speech train: augmented at every draw (voice: %s; speed factors %s, noise SNR %s dB on %.0f%% "
                     "of draws)", v.describe() if v else "none", w.speed_factors if w else [1.0],
                     w.snr_db if w else None, 100 * w.noise_prob if w else 0)
            return AugmentedUtterances(items, w, self.featurizer, self.class_names, self.augment_seed, voice=v)
        return SpeechUtterances(items)

    def split_vocabulary(self, split: str) -> tuple[set[str], int, list[str]] | None:
        """The case-folded words of a split's ``.wrd`` files, how many of its utterances have
        none, and the lines (file:line) of its zero-length words, which are left out; None when
        the split cannot be listed or none of its utterances has a ``.wrd``."""
        if not (self.root / self.split_specs[split]).exists():
            return None
        return read_vocabulary(self.split_files(split), self.reader)

    def check_shared_sentences(self) -> dict[str, int]:
        """Per split, its utterances that say a training sentence, warned about
        (``speech_checks.shared_sentences``); {} when a split list is missing."""
        specs = {sp: self.root / self.split_specs[sp] for sp in ("train", "val", "test")}
        if not all(p.exists() for p in specs.values()):
            log.info("speech: a split list is missing (%s): no check for sentences shared with training",
                     ", ".join(str(p) for p in specs.values() if not p.exists()))
            return {}
        return shared_sentences(self.root, self.split_files,
                                same_val_test=self.split_specs["val"] == self.split_specs["test"])

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
                    self.sets["predict"] = SpeechUtterances([self.read(f, labelled=False) for f in files])
            return
        wanted = {"fit": ["train", "val"], "validate": ["val"], "test": ["test"], "predict": ["test"]}.get(
            stage or "", ["train", "val", "test"])
        for split in wanted:
            if split not in self.sets:
                self.sets[split] = self.load_split(split)
        if self.shared_sentences is None:
            self.shared_sentences = self.check_shared_sentences()
        if "train" in self.sets and "test" in self.sets:
            check_shared_speakers(self.sets["train"].items, self.sets["test"].items)

    def add_recordings(self, files: list[Path]) -> None:
        """Predict files read in chunks: only their headers now (a file not at 16 kHz is
        read whole, as in training)."""
        for f in files:
            rec = self.reader.header(f)
            if not rec.streamable:
                u = self.read(f, labelled=False)
                self.recordings[u.id] = u
                continue
            if rec.frames == 0:
                raise ValueError(f"{f}: {rec.file_samples} samples is shorter than one 25 ms frame")
            sid = self._new_id()
            self.files[sid] = AudioFile(f, rec.file_rate, rec.file_samples, rec.frames)
            self.recordings[sid] = rec
        self.sets["predict"] = SpeechUtterances([])  # predict_split() is "predict"; chunks are planned later

    def data_spec(self, stage: str) -> DataSpec:
        """At fit, the training frames (for a SpeechEncoder with global normalization)."""
        spec = super().data_spec(stage)
        if spec.fit:
            spec = replace(spec, train_inputs=[u.x for u in self.sets["train"].items])
        return spec

    # -- loaders ---------------------------------------------------------------------------
    collate = staticmethod(pad_sets)

    def _loader(self, split: str, shuffle: bool = False,
                batch_size: int | None = None) -> DataLoader | SpeechDeviceLoader:
        data = self.sets[split]
        if split in ("train", "val", "test") and batch_size is None:
            device = self.trainer.strategy.root_device if self.trainer is not None else torch.device("cpu")
            if (loader := self.placement.loader(self, split, shuffle, device)) is not None:
                return loader
        if isinstance(data, AugmentedUtterances):
            # (epoch, index) keys; the order is RandomSampler's, as shuffle=True would draw it
            inner = RandomSampler(data) if shuffle else SequentialSampler(data)
            return DataLoader(data, batch_size=batch_size or self.batch_size, sampler=EpochKeys(inner),
                              collate_fn=self._bucketed_collate(), num_workers=self.num_workers)
        return DataLoader(data, batch_size=batch_size or self.batch_size, shuffle=shuffle,
                          collate_fn=self._bucketed_collate(), num_workers=self.num_workers)

    def _bucketed_collate(self):
        """``pad_sets``, then each batch padded to its length bucket (``length_buckets``)."""
        if not self.buckets.on:
            return self.collate
        return BucketedCollate(self.collate, self.buckets, {"x": (0.0, (1,)), "mask": (False, (1,)),
                                                            "y": (PAD_LABEL, (1,))})

    def longest_set(self) -> tuple[int, str] | None:
        """The longest utterance read for training, validation or test (a vector per 10 ms frame;
        predict reads its files in chunks of ``predict.chunk_frames``)."""
        items = [u for split, data in self.sets.items() if split != "predict" for u in data.items]
        if not items:
            return None
        u = max(items, key=lambda u: len(u.x))
        return len(u.x), f"{u.path} ({len(u.x)} frames)"

    def predict_split(self) -> str:
        return "predict" if "predict" in self.sets else "test"

    def predict_dataloader(self) -> DataLoader:
        """The predict split's utterances, or the recordings read in chunks through the loader
        the predict side planned (``chunk_loader``)."""
        if not self.recordings:
            return super().predict_dataloader()
        if self.chunk_loader is None:
            raise RuntimeError("speech predict in chunks (predict.chunk_frames > 0) reads its recordings with the "
                               "model's receptive field as context, planned when vecset.pipelines.predict."
                               "PredictionWriter (which `vecset predict` adds) asks for the output; add it to the trainer's callbacks, "
                               "or set predict.chunk_frames 0 to read each file whole")
        return self.chunk_loader

    # -- what the inputs were ----------------------------------------------------------------
    def describe(self, sample_id: int) -> str:
        return str(self.files[sample_id].path)

    # -- what the generic layers ask the job --------------------------------------------------
    def prediction_output(self, out_dir: Path, model: PredictModel) -> SpeechOutput:
        """A .frames/.phn pair per input file, written as each batch comes; the recordings read
        in chunks get their loader here, with the model's receptive field as context and the
        whole recording's statistics where the encoder normalizes per recording."""
        if self.recordings:
            self.chunk_loader = chunk_loader(self.recordings, self.featurizer, self.predict_chunk_frames,
                                             model.receptive_field, model.normalizes_per_set, self.batch_size,
                                             self.num_workers)
        return SpeechOutput(self, out_dir, model.segment_decoder)

    def default_reports(self) -> list:
        """The per-phone report, the segments of 3 test utterances, one block's attention over the frames."""
        from vecset.pipelines.speech.reports import (  # matplotlib
            FrameAttentionReport,
            PerPhoneReport,
            SegmentsReport,
        )

        return [PerPhoneReport(), SegmentsReport(), FrameAttentionReport()]

    @classmethod
    def model_links(cls) -> list[ModelLink]:
        """The feature count (``features.num_mel_bins``, or ``num_ceps`` for MFCC) is the encoder's
        ``in_dim``; the phone set's label count is the head's ``num_classes``."""
        return [ModelLink("speech feature count", ("features.kind", "features.num_mel_bins", "features.num_ceps"),
                          "encoder", "in_dim", feature_count),
                ModelLink("class count (the phone set's labels)", ("phone_set",), "head", "num_classes",
                          phone_count)]

    # -- what reports read ------------------------------------------------------------------
    def test_items(self) -> list[Utterance]:
        """The test utterances (``encoders/speech/reader.py``'s ``Utterance``: ``id``, ``x``
        (T, F) features, ``y``, ``segments``, ``words``, ``sample_rate``), in the loader's order."""
        return self.sets["test"].items
