"""The framing every speech file shares: 16 kHz, 25 ms frames every 10 ms (Kaldi's snip_edges)."""

from __future__ import annotations

SAMPLE_RATE = 16000
FRAME_LENGTH = 400  # 25 ms at 16 kHz
FRAME_SHIFT = 160  # 10 ms at 16 kHz


def num_frames(n_samples: int) -> int:
    """Kaldi snip_edges framing: 1 + (n - L) // S frames (0 when shorter than one frame)."""
    return 0 if n_samples < FRAME_LENGTH else 1 + (n_samples - FRAME_LENGTH) // FRAME_SHIFT
