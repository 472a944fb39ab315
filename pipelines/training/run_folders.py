"""The run folder a command writes to, read from its command line: a new runs/<name>/version_<n>
claimed exclusively (two runs started together never share one), the folder a
``--ckpt_path last`` or a checkpoint file continues, a failed new run's empty folder removed, and
the loggers that write into the folder.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from vecset.pipelines.training.metrics_history import HistoryCSVLogger

log = logging.getLogger(__name__)

RUNS_DIR = "runs"  # relative to the working directory, as Lightning's lightning_logs


def wants_last_checkpoint(argv: list[str]) -> bool:
    """True when the command line asks to resume from ``--ckpt_path last``."""
    for i, a in enumerate(argv):
        if a == "--ckpt_path" and i + 1 < len(argv) and argv[i + 1] == "last":
            return True
        if a == "--ckpt_path=last":
            return True
    return False


def taken_versions(root: Path) -> list[int]:
    """The n of every ``version_<n>`` directory under ``root``."""
    return [int(m.group(1)) for p in Path(root).glob("version_*") if (m := re.fullmatch(r"version_(\d+)", p.name))]


def ckpt_path_arg(argv: list[str]) -> str | None:
    """The value of ``--ckpt_path`` on the command line (the last one), or None."""
    value = None
    for i, a in enumerate(argv):
        if a == "--ckpt_path" and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith("--ckpt_path="):
            value = a.split("=", 1)[1]
    return value


def run_of_checkpoint(path: str | os.PathLike, runs: Path | None = None) -> tuple[str, int] | None:
    """``(job, n)`` for a checkpoint in a run directory's ``<runs>/<job>/version_<n>/checkpoints/``
    (any runs folder when ``runs`` is None); None for any other path or URL."""
    if not isinstance(path, (str, os.PathLike)) or "://" in str(path):
        return None
    p = Path(path).absolute()
    version = p.parent.parent
    m = re.fullmatch(r"version_(\d+)", version.name)
    if p.parent.name != "checkpoints" or m is None or not version.parent.name:
        return None
    if runs is not None and os.path.normpath(version.parent.parent) != os.path.normpath(Path(runs).absolute()):
        return None
    return version.parent.name, int(m.group(1))


def has_last_checkpoint(version_dir: Path) -> bool:
    """``version_dir/checkpoints`` holds a ``last*.ckpt`` (what ``--ckpt_path last`` resumes)."""
    return any((Path(version_dir) / "checkpoints").glob("last*.ckpt"))


def resumed_version(argv: list[str], root: Path) -> int | None:
    """With ``--ckpt_path last``, the newest ``version_<n>`` under ``root`` that holds a last
    checkpoint (an older one's when a newer run stopped before saving any), which the run
    continues; None otherwise, also when no version holds one: a run stopped before its first
    checkpoint has nothing to resume, and the command starts a new run (Lightning says that it
    found no last checkpoint) rather than restarting in that run's folder over its logs.
    ``check_resume`` refuses the run found when it is another run or a finished one."""
    if not wants_last_checkpoint(argv):
        return None
    taken = sorted(taken_versions(root), reverse=True)
    version = next((n for n in taken if has_last_checkpoint(Path(root) / f"version_{n}")), None)
    if version is not None:
        log.info("--ckpt_path last: continuing %s/version_%d", root, version)
    return version


def last_checkpoint_named(argv: list[str], root: Path) -> list[str]:
    """``argv`` of a ``validate``/``test``/``predict`` with ``--ckpt_path last``, the newest run's
    last checkpoint under ``root`` named as a file instead: the command evaluates that run from a
    folder of its own and leaves the run's config.yaml, metrics and results as they are (it
    rewrote the run's config.yaml with its own). Any other command line is returned as it is."""
    if not wants_last_checkpoint(argv) or not {"validate", "test", "predict"} & set(argv[:1]):
        return argv
    version = resumed_version(argv, root)
    if version is None:
        return argv  # no run with a last checkpoint: Lightning's own message says so
    ckpts = Path(root) / f"version_{version}" / "checkpoints"
    last = ckpts / "last.ckpt" if (ckpts / "last.ckpt").is_file() else max(ckpts.glob("last*.ckpt"),
                                                                           key=lambda p: p.stat().st_mtime)
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--ckpt_path" and i + 1 < len(argv) and argv[i + 1] == "last":
            out += ["--ckpt_path", str(last)]
            i += 2
            continue
        out.append(f"--ckpt_path={last}" if argv[i] == "--ckpt_path=last" else argv[i])
        i += 1
    return out


def resumed_run(argv: list[str], runs: Path) -> tuple[str, int] | None:
    """A fit resuming from a checkpoint file in a run directory (``--ckpt_path
    runs/<job>/version_<n>/checkpoints/last.ckpt``) continues that directory: ``(job, n)``, so
    its logs and metrics history stay in one folder; None for any other command line."""
    path = ckpt_path_arg(argv)
    if "fit" not in argv or path in (None, "last", "best", "hpc", "registry"):
        return None
    return run_of_checkpoint(path, runs)


def claim_version(root: Path) -> int:
    """Create a new ``version_<n>`` directory under ``root`` and return n: the number after the
    highest one there, or the next free one when another run created that directory first.
    The directory is created exclusively (``mkdir`` fails if it exists), so two runs started
    together never share one (they did, and overwrote each other's checkpoints and logs)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    n = max(taken_versions(root), default=-1) + 1
    while True:
        try:
            (root / f"version_{n}").mkdir()
            return n
        except FileExistsError:
            n += 1


def remove_unused_run_dir(version_dir: Path) -> bool:
    """Remove a new run's ``version_<n>`` directory after its command failed, when it holds
    nothing but empty folders, TensorBoard's event files and the config saved at its start (no
    checkpoint, metrics or report: not one step ran), so that no empty run is left to be taken for
    the newest one. True when it was removed."""
    version_dir = Path(version_dir)
    if not version_dir.is_dir():
        return False
    files = [p for p in version_dir.rglob("*") if not p.is_dir()]
    if any(not p.name.startswith("events.out.tfevents.") and p != version_dir / "config.yaml" for p in files):
        return False
    import shutil

    shutil.rmtree(version_dir, ignore_errors=True)
    return not version_dir.exists()


def default_loggers() -> list:
    """CSV and TensorBoard logs in runs/<config name>/version_<n>/ (one n for both). A new run
    claims its version directory here: after its config parsed (a rejected config leaves no
    directory behind), before DDP starts the other processes (they inherit the number)."""
    from pytorch_lightning.loggers import TensorBoardLogger

    name = os.environ.get("VECSET_RUN_NAME", "default")
    if "VECSET_RUN_VERSION" not in os.environ:
        os.environ["VECSET_RUN_VERSION"] = str(claim_version(Path(RUNS_DIR) / name))
    version = int(os.environ["VECSET_RUN_VERSION"])
    # CSV first: the trainer creates the loggers' folders in this order at setup, and
    # Lightning's CSV logger deleted what it found (HistoryCSVLogger keeps a resumed run's
    # metrics.csv; see pipelines/training/metrics_history.py)
    return [HistoryCSVLogger(RUNS_DIR, name=name, version=version),
            TensorBoardLogger(RUNS_DIR, name=name, version=version, default_hp_metric=False)]
