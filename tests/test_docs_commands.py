"""Every fenced ``vecset ...`` command line of README.md and docs/*.md parses against the command
it names, without training: LightningCLI's subcommands with ``--print_config`` (a missing config
file, an option no class takes or a wrong value fails), ``vecset export`` / ``ensemble`` /
``predict --model`` with their own parsers (and the CLI options they pass on). Issue 60: the guides
named ``checkpoints/best.ckpt``, which no run writes; a "your own molecules" command inherited
``split: column`` from a config and failed on a user's CSV (that block runs here, a few steps).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import io
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from vecset.pipelines.cli import run_cli
from vecset.shipped import shipped_config

ROOT = Path(__file__).resolve().parents[1]
GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# placeholders a guide's command stands for: a job's config for a run's saved one (the run's
# config.yaml is that config, dumped), a real config for "configs/X.yaml"
PLACEHOLDERS = [(re.compile(r"^runs/(\w+)/version_\d+/config\.yaml$"), r"configs/\1.yaml"),
                (re.compile(r"^configs/X\.yaml$"), "configs/debug.yaml")]


def fenced_commands() -> list[tuple[str, list[str]]]:
    """(``file:line``, its arguments after ``vecset``) for every line of a fenced block that runs
    ``vecset`` or ``<path>/vecset`` (after environment assignments; continuation lines joined,
    comments dropped)."""
    found = []
    for path in GUIDES:
        text = path.read_text()
        for block in re.finditer(r"^\s*```[^\n]*\n(.*?)^\s*```", text, flags=re.S | re.M):
            first = text[:block.start(1)].count("\n") + 1
            lines = block.group(1).split("\n")
            i = 0
            while i < len(lines):
                where, line = f"{path.relative_to(ROOT)}:{first + i}", lines[i]
                while line.rstrip().endswith("\\") and i + 1 < len(lines):
                    i += 1
                    line = line.rstrip()[:-1] + " " + lines[i].strip()
                i += 1
                if "vecset" not in line:
                    continue
                try:
                    tokens = shlex.split(line, comments=True)
                except ValueError as e:  # unbalanced quotes: as a shell would, it fails
                    found.append((where, [f"<{e}>"]))
                    continue
                while tokens and re.fullmatch(r"[A-Za-z_]\w*=.*", tokens[0]):
                    tokens = tokens[1:]
                if tokens and (tokens[0] == "vecset" or tokens[0].endswith("/vecset")):
                    found.append((where, tokens[1:]))
    return found


COMMANDS = fenced_commands()


def test_the_guides_hold_vecset_commands():
    # the collection itself: a change of the guides' fences would leave nothing to test
    subs = {argv[0] for _, argv in COMMANDS}
    assert len(COMMANDS) >= 40 and {"fit", "predict", "export"} <= subs, sorted(subs)


class Parsed(Exception):  # noqa: N818 (not an error: the parse succeeded)
    """Raised where an argparse parser of vecset's own commands returns: nothing runs after it."""

    def __init__(self, namespace: argparse.Namespace, rest: list[str]) -> None:
        super().__init__("parsed")
        self.namespace, self.rest = namespace, rest


def own_parse(monkeypatch, argv: list[str]) -> Parsed:
    """``vecset ARGV`` (export, ensemble, predict --model) up to its argparse parse."""
    from vecset.command import main

    original = argparse.ArgumentParser.parse_known_args

    def parse(self, args=None, namespace=None):
        result = original(self, args, namespace)
        if type(self) is argparse.ArgumentParser:  # the command's own parser (jsonargparse's subclass runs on)
            raise Parsed(*result)
        return result

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", parse)
    monkeypatch.setattr(sys, "argv", ["vecset", *argv])
    with pytest.raises(Parsed) as e:
        main()
    monkeypatch.undo()
    return e.value


def print_config(argv: list[str], run: bool = True) -> str:
    """What ``--print_config`` prints for ``argv`` (it must exit 0, having only parsed)."""
    out = io.StringIO()
    with pytest.raises(SystemExit) as e, contextlib.redirect_stdout(out):
        run_cli([*argv, "--print_config"], run=run)
    assert e.value.code in (0, None), f"exit {e.value.code}"
    return out.getvalue()


def substituted(argv: list[str]) -> list[str]:
    out = []
    for a in argv:
        for pattern, repl in PLACEHOLDERS:
            a = pattern.sub(repl, a)
        out.append(a)
    return out


@pytest.fixture
def guide_dir(tmp_path, monkeypatch):
    """A working directory with the checkout's configs/ and data/ (the guides' relative paths)."""
    for name in ("configs", "data"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("where,argv", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_a_guide_command_parses(where, argv, guide_dir, monkeypatch, capsys):
    argv = substituted(argv)
    configs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--config", "-c")]
    for c in configs:
        assert (guide_dir / c).is_file() or Path(c).is_file() or shipped_config(c) is not None, \
            f"{where}: --config {c}: no such file or shipped config"
    if argv[0] == "configs":  # vecset configs [copy NAME [DEST]]: lists or copies, reads no data
        from vecset.shipped import main as configs_main

        configs_main(argv[1:])
    elif argv[0] == "predict" and "--model" in argv:  # a shipped predictor: its own options, nothing else
        # the model's own parser (its input option); a user's folder the guide names (a run, a packed
        # model) is not in the checkout: its input option is the one the guide gives
        from vecset.pipelines.pretrained import PredictorError, parser, predictor_class

        model = argv[argv.index("--model") + 1]
        formats: tuple[str, ...] = ()
        try:
            cls = predictor_class(model)
            flag, metavar, formats = cls.input_flag, cls.input_column.upper(), cls.file_formats
        except PredictorError:
            assert "/" in model or not model.isidentifier() or model.startswith("my_"), f"{where}: --model {model}"
            flag = next((a for a in argv if a in ("--smiles", "--series", "--images", "--words")), "--smiles")
            metavar = flag[2:].upper()
        parser(flag, metavar, formats).parse_args(argv[1:])  # a speech model's --format and --out DIR too
    elif argv[0] == "export":
        ckpt = argv[argv.index("--ckpt_path") + 1]
        (guide_dir / ckpt).parent.mkdir(parents=True, exist_ok=True)
        (guide_dir / ckpt.replace("*", "x")).write_bytes(b"")  # the command checks the file is there first
        parsed = own_parse(monkeypatch, [a.replace("*", "x") if a == ckpt else a for a in argv])
        print_config([a for c in parsed.namespace.config for a in ("--config", c)] + parsed.rest, run=False)
    elif argv[0] == "pack":
        assert len(own_parse(monkeypatch, argv).namespace.__dict__) >= 2, f"{where}: vecset pack RUN_DIR OUT_DIR"
    elif argv[0] == "ensemble":
        print_config(["fit", *own_parse(monkeypatch, argv).rest])
    elif "--help" in argv or "-h" in argv:
        with pytest.raises(SystemExit) as e:
            run_cli(argv)
        assert e.value.code == 0
    else:
        assert argv[0] in ("fit", "validate", "test", "predict"), f"{where}: vecset {argv[0]}: no such command"
        print_config(argv)
    assert "error:" not in capsys.readouterr().err


def test_a_run_writes_the_best_checkpoint_the_guides_name(guide_dir):
    """The guides name ``runs/<job>/version_<n>/checkpoints/best-*.ckpt`` (a shell glob): a run
    writes exactly one such file, the one results.json names (``best.ckpt`` was never written)."""
    guided = {m for path in GUIDES for m in re.findall(r"checkpoints/(best[^\s`)]*\.ckpt)", path.read_text())}
    assert guided == {"best-*.ckpt"}, guided
    run_cli(["fit", "--config", "configs/debug.yaml", "--trainer.max_epochs=2", "--data.init_args.n_train=64",
             "--data.init_args.n_val=32", "--data.init_args.n_test=32", "--plots=false",
             "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"])
    found = glob.glob("runs/debug/version_0/checkpoints/best-*.ckpt")
    results = json.loads(Path("runs/debug/version_0/results.json").read_text())
    assert len(found) == 1 and Path(found[0]).resolve() == Path(results["checkpoint"]), (found, results["checkpoint"])


def test_the_molecule_guide_fits_a_users_csv(guide_dir):
    """docs/molecules.md's "your own molecules" command, as written, on a CSV of 12 molecules
    with a ``smiles`` column and a target (no ``split`` column), for two steps."""
    lines = (ROOT / "docs/molecules.md").read_text().splitlines()
    start = lines.index("## Your own molecules") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("## ")) + 1
    ((where, argv),) = [(w, a) for w, a in COMMANDS
                        if w.startswith("docs/molecules.md:") and start < int(w.split(":")[1]) < end]
    smiles = ["CCO", "CCCO", "CCCCO", "CC(C)O", "c1ccccc1", "c1ccccc1O", "CC(=O)O", "CCN", "CCCl", "CCOC",
              "CC(C)C", "OCCO"]
    Path("my_molecules.csv").write_text("smiles,my_target\n" + "".join(f"{s},{i * 0.5 - 2}\n" for i, s in enumerate(smiles)))
    cli = run_cli([*argv, "--trainer.max_steps=2", "--trainer.max_epochs=-1", "--trainer.max_time=null",
                   "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false", "--plots=false"])
    assert cli.trainer.global_step == 2, where
    assert Path(next(Path("runs").glob("*/version_0/results.json"))).is_file()
