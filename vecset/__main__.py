"""``python -m vecset ...`` is the ``vecset`` command (``vecset/command.py``): for an interpreter
without the installed script, and for launchers that take a module (``torchrun -m vecset``)."""

from vecset.command import main

main()
