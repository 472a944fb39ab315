"""Free-memory checks made before allocating pairwise (N x N) tensors."""

from __future__ import annotations

import math
import os

import torch

from vecset.backbone.tracing import is_exporting

LONG_INPUT_HINT = "use truncated attention (window=...) without a pairwise bias for long inputs, or shorter inputs"


def available_memory(device: torch.device) -> int | None:
    """Bytes that can still be allocated on ``device`` (None where it cannot be told)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_pairwise_memory(shape: tuple[int, ...], copies: float, element_size: int, device: torch.device,
                          what: str, hint: str = LONG_INPUT_HINT) -> None:
    """Raise a MemoryError before allocating pairwise tensors larger than the free memory (not
    while exporting: the traced sizes are symbols, and the serving machine is another one)."""
    if is_exporting():
        return
    need = copies * element_size * math.prod(shape)
    free = available_memory(device)
    if free is not None and need > free:
        raise MemoryError(
            f"{what} needs about {need / 2**30:.1f} GiB for its {' x '.join(map(str, shape))} "
            f"pairwise tensors, but only {free / 2**30:.1f} GiB is free on {device}; {hint}"
        )
