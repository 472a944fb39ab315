"""Padding a batch of series: time steps are the set's vectors (``encoders/collate.py``)."""

from __future__ import annotations

from vecset.encoders.collate import pad_sets


def collate_series(items: list[dict]) -> dict:
    """Items ``{"x": (T_i, C), "y": class index (absent when unknown), "id": int}`` -> a batch.

    Shapes:
        returns x (B, T, C) with T = max T_i, mask (B, T) True on real steps, y (B,) long, ids (B,)
    """
    return pad_sets(items)
