"""SIGTERM and Ctrl-C stop a run now, not when the running step ends.

Lightning's own SIGTERM handler only sets ``trainer.received_sigterm``, which its loops read
between steps: a step that takes ten minutes ignored SIGTERM for ten minutes. Python itself
runs a signal handler only between bytecodes of the main thread, so one long call into C (a
torch op over a huge set) delays even Ctrl-C's KeyboardInterrupt until that call returns.

``stop_on_signals`` (the ``vecset`` command runs inside it):

- SIGTERM raises ``SystemExit(143)`` in the main thread at its next bytecode (after
  Lightning's handler, which forwards the signal to DDP children); Lightning hands the
  exception to callbacks and loggers, tears down, and the process exits 128 + 15.
- SIGINT keeps Python's KeyboardInterrupt (Lightning's graceful shutdown, exit 1).
- A watchdog thread sees either signal the moment it arrives (``signal.set_wakeup_fd``:
  the C-level handler writes the signal number to a pipe while the main thread is still in
  C) and ends the process with ``os._exit(128 + signum)`` if it is still running
  ``grace_s`` seconds later, or at once at a second signal. The grace is 5 s unless the
  environment sets ``VECSET_STOP_GRACE_S`` (seconds, > 0; the tests shorten it).
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
GRACE_ENV = "VECSET_STOP_GRACE_S"
DEFAULT_GRACE_S = 5.0


def grace_from_env() -> float:
    """``VECSET_STOP_GRACE_S`` in seconds (> 0), or 5 s when it is unset."""
    raw = os.environ.get(GRACE_ENV)
    if raw is None:
        return DEFAULT_GRACE_S
    try:
        grace = float(raw)
    except ValueError:
        grace = float("nan")
    if not grace > 0:  # also NaN
        raise ValueError(f"{GRACE_ENV} must be a number of seconds > 0 (how long a stopped run may take "
                         f"to return to Python before it is ended), got {raw!r}")
    return grace


def _exit_on_sigterm(signum: int, frame) -> None:
    os.write(2, f"\nvecset: SIGTERM received; stopping the run (exit {128 + signum})\n".encode())
    raise SystemExit(128 + signum)


def _hard_exit(signum: int, why: str) -> None:
    name = signal.Signals(signum).name
    # os.write: no lock of sys.stderr that the stuck main thread might hold
    os.write(2, f"\nvecset: {name} received; {why}; exiting now without cleanup (exit {128 + signum})\n".encode())
    os._exit(128 + signum)


def _watch(read_fd: int, grace_s: float, done: threading.Event) -> None:
    """Wait for SIGTERM/SIGINT bytes on ``read_fd``; exit the process ``grace_s`` after the
    first one unless ``done`` is set (the main thread left the context) or the pipe closes."""
    signum, deadline = None, None
    try:
        while True:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([read_fd], [], [], timeout)
            if done.is_set():
                return
            if not ready:
                _hard_exit(signum, f"the running step did not return to Python within {grace_s:g} s")
            data = os.read(read_fd, 64)
            if not data:  # the context closed the pipe
                return
            # other signals with Python handlers (DataLoader's SIGCHLD) write here too
            for s in (s for s in data if s in STOP_SIGNALS):
                if signum is not None:
                    _hard_exit(s, "a second stop signal")
                signum, deadline = s, time.monotonic() + grace_s
    finally:
        os.close(read_fd)


@contextmanager
def stop_on_signals(grace_s: float | None = None) -> Iterator[None]:
    """Inside: SIGTERM exits (143) at the main thread's next bytecode, and a process still
    running ``grace_s`` (None: ``grace_from_env()``) after SIGTERM/SIGINT (stuck in one C call)
    is ended. Outside the main thread (where Python cannot install handlers) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    grace_s = grace_from_env() if grace_s is None else grace_s
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)  # set_wakeup_fd needs it: a signal handler must never block
    done = threading.Event()
    watchdog = threading.Thread(target=_watch, args=(read_fd, grace_s, done), name="vecset-stop-on-signals",
                                daemon=True)
    old_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    old_term = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    watchdog.start()
    try:
        yield
    finally:
        done.set()
        signal.signal(signal.SIGTERM, old_term)
        signal.set_wakeup_fd(old_fd)
        os.close(write_fd)  # the watchdog reads end-of-file and closes its end
        watchdog.join(timeout=1.0)


def end_process_group() -> None:
    """Destroy a DDP run's process group before the interpreter exits: left to interpreter
    shutdown, gloo's threads sometimes abort the process ("terminate called without an active
    exception", exit code -6) after the run has finished and written its results."""
    import torch

    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
