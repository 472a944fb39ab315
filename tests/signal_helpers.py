"""A callback the signal tests load through a config's ``trainer.callbacks``."""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

from pytorch_lightning.callbacks import Callback


class LongStep(Callback):
    """Makes the first training step long, after writing ``marker``: ``python`` spends it in
    many short calls (as most long steps do), ``c`` inside one C call that never returns (as a
    torch op over a huge set does for hours): a second lock of a plain pthread mutex, which
    signals do not interrupt and during which Python runs no signal handler."""

    def __init__(self, marker: str, where: str = "python") -> None:
        self.marker, self.where = marker, where

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        Path(self.marker).write_text(str(batch_idx))
        if self.where == "python":
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                time.sleep(0.05)
        else:
            mutex = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER (a normal mutex)
            libc = ctypes.CDLL(None)  # ctypes releases the GIL for the call, as torch ops do
            libc.pthread_mutex_lock(mutex)
            libc.pthread_mutex_lock(mutex)  # relocking a normal mutex blocks for good (POSIX)
