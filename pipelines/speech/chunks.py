"""Long recordings read in chunks for ``vecset predict``, so memory does not grow with their length.

Each recording is cut into cores of ``chunk_frames`` frames; a chunk is its core plus the
model's receptive field as context on each side (fewer at the recording's ends), read and
featurized on its own (``encoders/speech/streaming.py``: a range of frames equals the whole
file's), and only its core's predictions are kept: the chunks together give exactly the whole
recording's output. A model that normalizes per recording gets the whole recording's statistics
with every chunk (one streaming pass per recording). Batches hold at most ``batch_size`` chunks
and one chunk's worth of frames.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from vecset.encoders.collate import pad_sets
from vecset.encoders.speech import (
    Featurizer,
    Recording,
    Utterance,
    frames_stats,
    read_frames,
    recording_stats,
)

log = logging.getLogger(__name__)


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


def predict_chunks(recordings: dict[int, Recording | Utterance], chunk_frames: int,
                   context: int | None) -> list[Chunk]:
    """Every recording cut into chunks (one read whole already, an ``Utterance``, is one chunk);
    a recording longer than one chunk with a model whose output depends on every frame
    (``context`` None) is an error: it cannot be cut exactly."""
    chunks = []
    for sid, rec in recordings.items():
        frames = len(rec.x) if isinstance(rec, Utterance) else rec.frames
        if isinstance(rec, Utterance) or frames <= chunk_frames:
            chunks.append(Chunk(sid, 0, frames, 0, frames, 1))
            continue
        if context is None:
            raise ValueError(
                f"{rec.path}: {frames} frames is longer than predict.chunk_frames={chunk_frames}, "
                "and the model's output at a frame depends on every frame (full attention without a window, "
                "an LSTM or a pooling head: no finite receptive field), so it cannot be predicted in chunks "
                "exactly; set --data.predict.chunk_frames 0 to read each file whole (memory grows with its "
                "length; attention refuses what does not fit), or use truncated attention (window)")
        part = plan_chunks(sid, frames, chunk_frames, context)
        log.info("%s: %d frames in %d chunks of %d frames, %d frames of context on each side",
                 rec.path, frames, len(part), chunk_frames, context)
        chunks += part
    return chunks


class SpeechChunks(Dataset):
    """Chunks of the recordings, featurized when asked for:
    ``{"x": (hi - lo, F), "id": sid, "offset": lo, "keep": (start - lo, end - lo)}``, plus
    ``"stats"`` (2, F), the whole recording's mean and deviation, when the model normalizes per
    recording and the recording has several chunks (one streaming pass per recording, cached
    until the next recording). A recording not at 16 kHz was featurized whole by the data
    (an ``Utterance``: resampling in blocks would not equal resampling whole)."""

    def __init__(self, chunks: list[Chunk], recordings: dict[int, Recording | Utterance], featurizer: Featurizer,
                 stats: bool, block_frames: int) -> None:
        self.chunks, self.recordings = chunks, recordings
        self.featurizer, self.stats, self.block_frames = featurizer, stats, block_frames
        self._stats: tuple[int, torch.Tensor] | None = None

    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, i: int) -> dict:
        c = self.chunks[i]
        rec = self.recordings[c.sid]
        x = rec.x if isinstance(rec, Utterance) else read_frames(rec, c.lo, c.hi, self.featurizer)  # (hi - lo, F)
        item = {"x": x, "id": c.sid, "offset": c.lo, "keep": (c.start - c.lo, c.end - c.lo)}
        if self.stats and c.chunks > 1:
            if self._stats is None or self._stats[0] != c.sid:
                mean, std = recording_stats(rec, self.featurizer, self.block_frames)
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


def chunk_loader(recordings: dict[int, Recording | Utterance], featurizer: Featurizer, chunk_frames: int,
                 context: int | None, stats: bool, batch_size: int, num_workers: int = 0) -> DataLoader:
    """The recordings' chunks in order (``predict_chunks``), batched by frames: a batch holds at
    most ``batch_size`` chunks and one chunk's worth of frames (chunk plus context), so its
    memory does not depend on how long the recordings are: a long recording's chunks go one per
    batch, short files are grouped.

    Args:
        recordings: sample id -> a 16 kHz file's header (read in blocks), or an utterance read whole.
        featurizer: the data's featurizer.
        chunk_frames: the core of a chunk, in frames.
        context: the model's receptive field (frames on each side; None: unbounded).
        stats: the model normalizes per recording (each chunk gets the whole recording's statistics).
    """
    chunks = predict_chunks(recordings, chunk_frames, context)
    ds = SpeechChunks(chunks, recordings, featurizer, stats, chunk_frames)
    budget = chunk_frames + 2 * (context or 0)
    return DataLoader(ds, batch_sampler=ChunkBatches([c.hi - c.lo for c in chunks], budget, batch_size),
                      collate_fn=collate_chunks, num_workers=num_workers)
