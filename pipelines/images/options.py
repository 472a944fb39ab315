"""ImageFolderDataModule's split group (a config section under ``data.init_args``); where the
images live is the shared ``DevicePlacement`` (``data/options.py``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FolderSplit:
    """How a single folder of class folders is split (stratified), and train into train/val when
    there is no val folder.

    Args:
        val_fraction: the share held out for validation.
        test_fraction: the share held out for test (a single folder only).
        seed: the stratified draw's seed.
    """

    val_fraction: float = 0.1
    test_fraction: float = 0.1
    seed: int = 0


__all__ = ["FolderSplit"]
