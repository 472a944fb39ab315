"""SpeechEncoder: frames -> VectorSet (normalization, SpecAugment in training, a convolutional front-end, positions, an optional attention window)."""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet
from vecset.encoders.contract import Encoder
from vecset.encoders.standardize import GlobalStandardization
from vecset.encoders.vector import Positional1D, make_positional_1d, max_positions

# --- encoder --------------------------------------------------------------------------------
Normalization = Literal["utterance", "global", "none"]


class SpeechEncoder(GlobalStandardization, Encoder):
    """Filterbank frames -> VectorSet: mean/variance normalization, SpecAugment in training,
    a linear projection to d_model and a positional encoding.

    Args:
        in_dim: feature width (the DataModule's num_mel_bins, or num_ceps for MFCC).
        d_model: output width.
        normalization: ``utterance`` (each utterance's real frames to zero mean, unit
            variance per bin), ``global`` (training-set statistics, kept as buffers in the
            checkpoint; fitted at the start of fit on the training frames the data hands
            over, ``DataSpec.train_inputs``) or ``none``.
        freq_mask_param, time_mask_param: SpecAugment mask widths (0 = off), applied
            ``freq_masks`` / ``time_masks`` times per utterance, only in training.
        positional: ``none``, ``sinusoidal`` or ``learned`` (``max_len`` frames).
        conv_kernel: if > 0, a convolution over time (this many frames) after the projection,
            with a residual connection: a local-order front-end, as in Conformer-style models
            (Gulati et al. 2020); truncated attention alone cannot tell left from right.
        dropout: dropout after the projection.
        window: truncated attention for these frames (each sees +-window frames), carried on
            the VectorSet so that a backbone shared with other modalities applies it to
            speech only; None leaves it to the backbone's own ``window``.

    Chunks of a longer recording (``vecset predict`` on long files, see docs/speech.md) carry
    ``batch["offsets"]`` (B,) long, the first frame's index in its recording (positions start
    there), and for ``utterance`` normalization ``batch["utterance_mean"]`` and
    ``batch["utterance_std"]`` (B, in_dim), the whole recording's statistics (a chunk's own
    would differ).

    Shapes:
        batch["x"] (B, T, in_dim) float, batch["mask"] (B, T) bool -> VectorSet (B, T, d_model)
    """

    def __init__(self, in_dim: int, d_model: int, normalization: Normalization = "utterance",
                 freq_mask_param: int = 0, time_mask_param: int = 0, freq_masks: int = 2,
                 time_masks: int = 2, positional: Positional1D = "sinusoidal", max_len: int | None = None,
                 conv_kernel: int = 0, dropout: float = 0.0, window: int | None = None) -> None:
        super().__init__()
        if window is not None and window < 1:
            raise ValueError(f"window must be >= 1 (each frame sees +-window frames) or None, got {window}")
        self.window = window
        if normalization not in ("utterance", "global", "none"):
            raise ValueError(f"normalization must be 'utterance', 'global' or 'none', got {normalization!r}")
        import torchaudio.transforms as T

        self.in_dim, self.normalization = in_dim, normalization
        self.out_width = d_model
        self._init_standardization(in_dim)
        self.freq_masks, self.time_masks = freq_masks, time_masks
        self.freq_mask = T.FrequencyMasking(freq_mask_param, iid_masks=True) if freq_mask_param else None
        self.time_mask = T.TimeMasking(time_mask_param, iid_masks=True) if time_mask_param else None
        self.proj = nn.Linear(in_dim, d_model)
        if conv_kernel < 0 or (conv_kernel and conv_kernel % 2 == 0):
            raise ValueError(f"conv_kernel must be 0 (off) or an odd number of frames, got {conv_kernel}")
        self.conv = nn.Conv1d(d_model, d_model, conv_kernel, padding=conv_kernel // 2) if conv_kernel else None
        self.drop = nn.Dropout(dropout)
        self.positional = make_positional_1d(positional, d_model, max_len)

    @property
    def max_set_size(self) -> int | None:
        """A learned positional table's length (``backbone.abilities.MaxSetSize``)."""
        return max_positions(self.positional)

    @property
    def normalizes_per_set(self) -> bool:
        """``utterance`` normalization: a chunk of a long recording is normalized by the whole
        recording's statistics (``batch["utterance_mean"]`` / ``["utterance_std"]``)."""
        return self.normalization == "utterance"

    @property
    def receptive_field(self) -> int:
        """Frames on each side one output frame depends on (the convolution's half width;
        normalization uses whole-recording statistics, see ``normalize``)."""
        return self.conv.kernel_size[0] // 2 if self.conv is not None else 0

    def receive(self, spec: DataSpec) -> str | None:
        """``global`` normalization: fit the statistics on the training frames at the start
        of fit (once: a model that has them, from an earlier fit or a checkpoint, keeps them)."""
        if self.normalization == "global" and spec.fit and not self._stats_known:
            frames = spec.inputs("SpeechEncoder(normalization='global')")
            self.set_global_stats(frames)
            return f"global mean/variance normalization fitted on {len(frames)} training utterances"
        return None

    def normalize(self, x: Tensor, mask: Tensor, batch: dict | None = None) -> Tensor:
        if self.normalization == "none":
            return x
        if self.normalization == "global":
            return self.standardize(x, "training frames (vecset's speech frames data does)")
        if batch is not None and "utterance_mean" in batch:  # a chunk: its recording's statistics
            mean, std = batch["utterance_mean"].to(x.dtype), batch["utterance_std"].to(x.dtype)  # (B, F)
            return (x - mean[:, None]) / std[:, None]
        m = mask[..., None].to(x.dtype)  # (B, T, 1)
        n = m.sum(1, keepdim=True).clamp_min(1)  # (B, 1, 1)
        mean = (x * m).sum(1, keepdim=True) / n  # (B, 1, F)
        var = ((x - mean).pow(2) * m).sum(1, keepdim=True) / n
        return (x - mean) / var.clamp_min(1e-10).sqrt()

    def spec_augment(self, x: Tensor) -> Tensor:
        spec = x.transpose(1, 2)  # (B, F, T): torchaudio masks the last two dims
        if self.freq_mask is not None:
            for _ in range(self.freq_masks):
                spec = self.freq_mask(spec)
        if self.time_mask is not None:
            for _ in range(self.time_masks):
                spec = self.time_mask(spec)
        return spec.transpose(1, 2)  # (B, T, F)

    def forward(self, batch: dict) -> VectorSet:
        x: Tensor = batch["x"]
        mask: Tensor = batch["mask"]
        if x.shape[-1] != self.in_dim:
            raise ValueError(f"SpeechEncoder expects {self.in_dim} features per frame, got {x.shape[-1]}: set "
                             "in_dim to the DataModule's num_mel_bins (num_ceps for MFCC)")
        x = self.normalize(x, mask, batch)  # (B, T, F)
        if self.training:
            x = self.spec_augment(x)
        m = mask[..., None].to(x.dtype)  # (B, T, 1)
        h = self.proj(x) * m  # (B, T, D); zero padding looks like the zeros past the ends
        if self.conv is not None:
            h = h + F.gelu(self.conv(h.transpose(1, 2))).transpose(1, 2) * m  # (B, T, D)
        h = self.drop(h)
        offsets = batch.get("offsets")
        if offsets is None:
            pe = self.positional(x.shape[1], x.device)  # (T, D)
        else:  # chunks of longer recordings: each one's positions start at its first frame
            pes = [self.positional(x.shape[1], x.device, start=int(s)) for s in offsets.tolist()]
            pe = None if pes[0] is None else torch.stack(pes)  # (B, T, D)
        if pe is not None:
            h = h + pe
        return VectorSet(x=h * m, mask=mask, window=self.window, padded=batch.get("padded"))
