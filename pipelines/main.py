"""The one ``vecset`` command: LightningCLI's subcommands (fit, validate, test, predict:
``cli.py``) and vecset's own, dispatched by name before LightningCLI parses anything:

- ``vecset export``: a trained model as a torch.export program and ONNX (``export/command.py``);
- ``vecset ensemble``: k members trained with k seeds on one split, combined (``ensemble.py``);
- ``vecset pack RUN_DIR OUT_DIR``: a run as a model folder with its model card (``pack.py``);
- ``vecset predict --model NAME-or-DIR``: a shipped model, a model folder or a run folder, without a
  config (``pretrained.py``).

It sits above everything in ``pipelines/`` (tests/pipelines/test_inner_order.py) and imports a
subcommand's module only when that subcommand runs (``predict --model`` imports no Lightning);
it names no job.
"""

from __future__ import annotations

import contextlib
import io
import sys
import textwrap

from vecset.pipelines.pretrained import command_main, wants_predictor
from vecset.pipelines.signals import stop_on_signals

# name -> (its module, the help line's text)
SUBCOMMANDS = {
    "export": ("vecset.pipelines.export.command",
               "Write a trained model as a torch.export program (.pt2) and ONNX: vecset export --help."),
    "ensemble": ("vecset.pipelines.ensemble",
                 "Train k members with k seeds on one split and combine them: vecset ensemble --help."),
    "pack": ("vecset.pipelines.pack",
             "Write a run's best model as a model folder with its model card, for vecset predict --model "
             "OUT_DIR and vecset.pretrained(OUT_DIR): vecset pack RUN_DIR OUT_DIR."),
}

SHIPPED_HELP = ("Predict with a shipped model, a model folder or a run folder, no config or checkpoint: "
                "vecset predict --model NAME-or-DIR --help.")


def help_text() -> str:
    """LightningCLI's ``--help``, which lists its own subcommands only, with vecset's after them."""
    from vecset.pipelines import cli

    text, argv = io.StringIO(), sys.argv
    sys.argv = argv[:1]  # LightningCLI warns when it is given args and sys.argv holds some too
    with contextlib.redirect_stdout(text):
        try:
            cli.run_cli(["--help"])
        except SystemExit:
            pass
        finally:
            sys.argv = argv
    out = text.getvalue().replace("{fit,validate,test,predict}", "{fit,validate,test,predict," + ",".join(SUBCOMMANDS) + "}", 1)
    lines = out.splitlines(keepends=True)
    last = max((i for i, line in enumerate(lines) if line.startswith("    predict ")), default=None)
    if last is not None:  # after predict's description (its continuation lines are indented deeper)
        end = next((i for i in range(last + 1, len(lines)) if not lines[i].startswith("      ")), len(lines))
        lines[end:end] = [textwrap.fill(what, width=80, initial_indent=f"    {name:<20}", subsequent_indent=" " * 24) + "\n"
                          for name, (_, what) in [*SUBCOMMANDS.items(), ("predict --model", (None, SHIPPED_HELP))]]
    return "".join(lines)


def main() -> None:
    """Console entry point ``vecset`` (``vecset/command.py`` sets the process's OpenMP setting first)."""
    argv = sys.argv[1:]
    if wants_predictor(argv):  # vecset predict --model NAME-or-DIR: a predictor (pretrained.py)
        with stop_on_signals():
            raise SystemExit(command_main(argv[1:]))
    if argv[:1] and argv[0] in SUBCOMMANDS:
        import importlib

        module = importlib.import_module(SUBCOMMANDS[argv[0]][0])
        with stop_on_signals():
            module.main(argv[1:])
        return
    if argv in (["-h"], ["--help"]):
        sys.stdout.write(help_text())
        raise SystemExit(0)
    if argv in (["predict", "-h"], ["predict", "--help"]):  # LightningCLI's predict help follows
        sys.stdout.write(f"vecset predict --model NAME-or-DIR: {SHIPPED_HELP}\n\nWith a config (LightningCLI):\n")
    from vecset.pipelines import cli

    cli.main()
