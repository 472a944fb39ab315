"""Option groups that several data modules share, and taking a group from a config mapping.

A data module's options come in typed groups (a frozen dataclass per concern), which
jsonargparse shows as nested config sections (``data.init_args.placement.on_device: auto``),
as torchvision groups a transform's settings; each module keeps at most 15 top-level arguments
(tests/pipelines/data/test_option_groups.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from vecset.pipelines.data.gathered import BucketSpec

G = TypeVar("G")


@dataclass(frozen=True)
class DevicePlacement:
    """Where the splits live (``data/device_loader.py``).

    Args:
        on_device: keep the splits on the training device, packed into tensors, and draw the
            batches there (the classic loader's batches; seeded order, every item once an epoch,
            exact mid-epoch resume): ``true``, ``false`` (the classic DataLoader) or ``auto`` (there
            when all splits take at most ``device_memory_share`` of the device's memory). Said in
            one line at the start.
        device_memory_share: the share of the device's memory the splits may take.
    """

    on_device: bool | Literal["auto"] = False
    device_memory_share: float = 0.5


@dataclass(frozen=True)
class BucketedPlacement(DevicePlacement):
    """``DevicePlacement``, and length buckets for sets of different lengths (frames, atoms:
    ``data/gathered.py``).

    Args:
        length_buckets: pad each batch to a width from a small fixed set instead of its longest
            item, so that shapes repeat (fewer recompilations under ``torch.compile``): ``pow2``
            (the next power of two, at least 8) or increasing edges (``[16, 32, 64]``; a longer
            item pads to its batch's own length); null: none. The padding is masked.
        bucket_batches: draw each training batch from one length bucket (less padding), the
            batches in a seeded order; needs ``length_buckets`` and the data on the device.
    """

    length_buckets: BucketSpec = None
    bucket_batches: bool = False


def as_group(cls: type[G], value: G | Mapping[str, Any] | None, where: str) -> G:
    """``value`` as the option group ``cls``: the group itself, a mapping of its fields (a
    dumped config's ``init_args``), or None for its defaults. An unknown key is one error naming
    ``where`` (the argument) and the keys it takes."""
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"{where}: expected a {cls.__name__} or a mapping of its fields, got {value!r}")
    fields = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise ValueError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                         f"(it takes {', '.join(fields)})")
    return cls(**value)


__all__ = ["BucketedPlacement", "DevicePlacement", "as_group"]
