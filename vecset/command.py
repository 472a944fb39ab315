"""The ``vecset`` console command (``[project.scripts]`` in pyproject.toml): the process's
OpenMP setting first, then the CLI (``vecset.pipelines.cli``).

``OMP_WAIT_POLICY=PASSIVE`` unless the user set the variable: torch's OpenMP threads then
sleep at the end of a parallel region instead of spinning for a while. On a laptop or a
shared server, where another process holds one of the cores torch's threads run on, the
spinning threads take that core's time from the thread doing the work, and a fit runs
several times slower (``bench/omp_wait.py`` measures it). libgomp reads the variable once,
when ``import torch`` loads it, so it is set here, before anything imports torch (``import
vecset`` does not).
"""

from __future__ import annotations

import os


def main() -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # a user's own value wins
    import sys

    from vecset.pipelines.pretrained import command_main, wants_shipped_model  # imports torch

    if wants_shipped_model(sys.argv[1:]):  # vecset predict --model NAME: without LightningCLI's imports
        raise SystemExit(command_main(sys.argv[2:]))
    from vecset.pipelines.cli import main as cli_main

    cli_main()
