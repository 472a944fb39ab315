"""The ``vecset`` command: LightningCLI with vecset's run directories and results.

``vecset fit --config configs/debug.yaml`` trains, keeps checkpoints (best and last),
TensorBoard and CSV logs and the config in ``runs/<config name>/version_<n>/``, then tests
the best checkpoint and writes ``results.json`` there. After every test ``ReportWriter``
(pipelines/reports/callback.py) writes the run's curves and each task's reports there too,
unless ``--plots false``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
import warnings
from pathlib import Path

import pytorch_lightning as pl
import yaml
from pytorch_lightning.callbacks import ModelSummary as LightningModelSummary
from pytorch_lightning.cli import LightningArgumentParser, LightningCLI

import vecset.pipelines
from vecset.pipelines.config_errors import (
    DEBUG_ENV,
    SettingError,
    constructor_error,
    debug_mode,
    parse_error,
)
from vecset.pipelines.config_links import (
    add_links,
    argv_of,
    data_classes,
    link_conflict,
    multi_task_links,
    multi_task_names,
    single_task_links,
    unset_target,
)
from vecset.pipelines.console import ModelSummary, ProgressBar
from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.data_errors import data_error, missing_input
from vecset.pipelines.predict.writer import PredictionWriter
from vecset.pipelines.predictor import predict_table
from vecset.pipelines.reports.callback import ReportWriter
from vecset.pipelines.signals import end_process_group
from vecset.pipelines.training.averaging import warn_lightning_averaging
from vecset.pipelines.training.callbacks import NonFiniteGuard, ResumeState
from vecset.pipelines.training.checkpoint import last_checkpoint_path, with_atomic_checkpoint_io
from vecset.pipelines.training.checkpoint_config_check import CheckpointConfigCheck
from vecset.pipelines.training.elapsed import TrainingClock
from vecset.pipelines.training.lightning_advice import silence_inapplicable_advice
from vecset.pipelines.training.lr_finder import FoundLearningRate
from vecset.pipelines.training.metrics_history import TrimMetricsHistory
from vecset.pipelines.training.precision import (
    accept_auto_precision,
    backbone_width,
    ran_as,
    resolve_precision,
)
from vecset.pipelines.training.run_folders import (
    RUNS_DIR,
    default_loggers,
    last_checkpoint_named,
    remove_unused_run_dir,
    resumed_run,
    resumed_version,
    wants_last_checkpoint,
)
from vecset.shipped import with_shipped_configs


def config_name(argv: list[str]) -> str:
    """The run's name: the stem of the first ``--config``/``-c`` file on the command line, the
    job's config (a second one is an overlay on it, e.g. a learning-rate finder's settings, and
    named ``runs/<overlay>/`` a run of the job's; 'default' if none), or, for a run directory's
    own ``runs/<job>/version_<n>/config.yaml``, the job's name (``<job>``: a predict with a saved
    run's config is that job's, not "config")."""
    path = None
    for i, a in enumerate(argv):
        if a in ("--config", "-c") and i + 1 < len(argv):
            path = Path(argv[i + 1])
        elif a.startswith("--config="):
            path = Path(a.split("=", 1)[1])
        if path is not None:
            break
    if path is None:
        return "default"
    if re.fullmatch(r"version_\d+", path.parent.name) and path.parent.parent.name:
        return path.parent.parent.name
    return path.stem


class VecsetArgumentParser(LightningArgumentParser):
    """LightningCLI's parser; a linked value given twice, differently, is reported as its one
    line (pipelines/config_links.py), without jsonargparse's wrapping and usage text. Dumped
    configs (a run's saved config.yaml, ``--print_config``) keep the link targets: jsonargparse
    would leave every one out, also one that the config gave itself because its link does not
    apply (a VectorEncoder's in_dim), and the file would not reload. A saved config holds the
    linked values (they agree); ``--print_config``, printed before links apply, null (a null
    linked value follows its source)."""

    def dump(self, *args, **kwargs) -> str:
        kwargs["skip_link_targets"] = False
        return super().dump(*args, **kwargs)

    def error(self, message: str, ex: Exception | None = None):
        # a nested key's error leads with its full config path and the reason, not the Union dump
        # (only where it is reported: a nested parser's message is read by the outer one)
        conflict = link_conflict(ex)
        if not self.exit_on_error:
            return super().error(message if conflict is None else str(conflict), ex)
        short = str(conflict) if conflict is not None else None if debug_mode() else parse_error(message)
        if short is None:
            return super().error(message, ex)
        self._logger.error(short)
        sys.stderr.write(f"error: {short}\n")
        if conflict is None and short != message.strip():  # reworded: where the options are listed
            prog = self.prog.replace(" [options]", "")  # as jsonargparse's own tip writes it
            sys.stderr.write(f"  (rejected while reading the config and the command line; {prog} --help lists "
                             "the options)\n")
        sys.exit(2)


class VecsetCLI(CheckpointConfigCheck, LightningCLI):
    def __init__(self, *args, resumes: Path | None = None, **kwargs) -> None:
        kwargs.setdefault("parser_class", VecsetArgumentParser)
        self.resumes = resumes  # the run directory a resumed fit continues (CheckpointConfigCheck checks it)
        self._subcommands = kwargs.get("run", True)  # False: one parser, no subcommand (vecset export)
        super().__init__(*args, **kwargs)

    def instantiate_classes(self) -> None:
        """As LightningCLI's; a constructor that raises is reported as its own message on the
        first line, after the object's config path and class (pipelines/config_errors.py)."""
        # a file or folder the data names that is not there: found now, before any model is built
        missing = None if debug_mode() else missing_input(self._subcommand_config(), self.subcommand)
        if missing is not None:
            if not self.parser.exit_on_error:
                raise SettingError(missing)
            sys.stderr.write(f"error: {missing}\n")
            sys.exit(2)
        try:
            super().instantiate_classes()
        except Exception as ex:
            failed = None if debug_mode() else constructor_error(ex, self._subcommand_config())
            if failed is None:
                raise
            lines = failed.lines()
            if not self.parser.exit_on_error:
                raise ValueError("\n".join(lines)) from failed.error
            logging.getLogger(__name__).debug("constructor failed", exc_info=ex)
            sys.stderr.write("error: " + "\n".join(lines) + "\n")
            sys.exit(2)

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_argument("--plots", type=bool, default=True,
                            help="write the curves and each task's reports and plots into the run directory after test")
        accept_auto_precision(parser)
        if not self._subcommands:
            # a run's saved config.yaml has its subcommand's arguments (ckpt_path, ...): here the
            # config only builds the model and data (vecset export reads its own --ckpt_path),
            # so they are accepted and not used
            for key, typ in (("ckpt_path", str | None), ("weights_only", bool | None), ("verbose", bool),
                             ("return_predictions", bool | None)):
                parser.add_argument(f"--{key}", type=typ, default=None,
                                    help="not used without a subcommand (a run's saved config.yaml carries it)")
        # values given once: the model width here; what the data declares once its class is known
        add_links(parser, single_task_links())

    def parse_arguments(self, parser: LightningArgumentParser, args) -> None:
        """As LightningCLI's, with the links the data declares and a multi-task config's (its
        task names are its own), added once the config files are known (they name the data
        classes), and a check that every linked value the model needs is set."""
        argv = argv_of(args)
        tasks, classes = multi_task_names(argv), data_classes(argv)
        links = single_task_links(classes.get("")) + multi_task_links(tasks, classes)
        parsers = list(getattr(self, "_subcommand_parsers", {}).values()) or [parser]
        for p in parsers:
            add_links(p, links)
        super().parse_arguments(parser, args)
        sub = self.config.get("subcommand")  # self.subcommand is set after this
        missing = unset_target(self.config[sub] if sub else self.config, links)
        if missing:
            (self._subcommand_parsers[sub] if sub else parser).error(missing)

    def _instantiate_trainer(self, config: dict, callbacks: list):
        # vecset's defaults: a rich progress bar unless turned off, and for predict (or a CLI built
        # with run=False, whatever it runs) the prediction writer
        if config.get("logger") in (None, True):
            config["logger"] = default_loggers()
        writer = [PredictionWriter()] if self.subcommand in (None, "predict") else []
        callbacks = list(callbacks) + [*writer, ResumeState(), TrainingClock(), TrimMetricsHistory(), FoundLearningRate()]
        # a NonFiniteGuard in trainer.callbacks (e.g. init_args {check_inputs: false}, or both
        # checks off) replaces the default one
        configured = [*(config.get("callbacks") or []), *callbacks]
        if not any(isinstance(c, NonFiniteGuard) for c in configured):
            callbacks.append(NonFiniteGuard())
        warn_lightning_averaging(configured)  # its test after fit scores the training weights
        if self._subcommand_config().get("plots", True) and not any(isinstance(c, ReportWriter) for c in configured):
            callbacks.append(ReportWriter())
        config["plugins"] = with_atomic_checkpoint_io(config.get("plugins"))
        # auto (the default): bf16-mixed where the hardware has bf16 matrix units and the model is
        # not narrow, else 32-true; the saved config.yaml keeps the request, results.json what ran
        choice = resolve_precision(config.get("precision"), config.get("accelerator"), backbone_width(self.model))
        config["precision"] = choice.precision
        if config.get("enable_progress_bar", True) is not False:
            callbacks.append(ProgressBar())
        if config.get("enable_model_summary", True) is not False and not any(
                isinstance(c, LightningModelSummary) for c in configured):
            callbacks.append(ModelSummary())
            # the trainer's own default is off: it would say on every run that it skips it for this one
            config["enable_model_summary"] = False
        trainer = super()._instantiate_trainer(config, callbacks)
        # what runs (Lightning runs 16-mixed as bf16-mixed on a CPU): printed, and in results.json
        self.precision_choice = ran_as(choice, trainer.precision)
        if int(os.environ.get("LOCAL_RANK", 0)) == 0 and int(os.environ.get("NODE_RANK", 0)) == 0:
            print(self.precision_choice.line(), flush=True)
        return trainer

    def _subcommand_config(self):
        """This subcommand's parsed options (the whole config when built with run=False)."""
        return self.config[self.subcommand] if self.subcommand else self.config

    def before_fit(self) -> None:
        self._t0 = time.time()

    def before_validate(self) -> None:
        if self._subcommand_config().get("ckpt_path") is None:
            warnings.warn(f"vecset {self.subcommand}: no --ckpt_path: the model runs with the weights its config "
                          "builds (random, unless its init_from or backbone_ckpt loads some); give --ckpt_path "
                          "runs/<job>/version_<n>/checkpoints/<file>.ckpt (or last)", UserWarning, stacklevel=2)
        # a checkpoint's ModelCheckpoint state (best scores, top-k files) matters only to a fit
        # that keeps saving into its directory; Lightning warns at every evaluation of a
        # checkpoint from elsewhere that it is not reloaded
        warnings.filterwarnings("ignore", category=UserWarning,
                                message=r"The dirpath has changed from .* won't be reloaded\. Only "
                                        r"`best_model_path` will be reloaded\.$")

    before_test = before_predict = before_validate

    def predict(self, **kwargs):
        """``vecset predict --config ... --ckpt_path FILE``: data whose job has a predictor and whose
        inputs are a table (the molecule job's ``predict_csv``) predicts through that predictor,
        the rows ``vecset predict --model RUN_DIR`` writes (``predictor.predict_table``); other
        data through Lightning's predict loop and the ``PredictionWriter``."""
        data, ckpt = kwargs.get("datamodule"), kwargs.get("ckpt_path")
        if not (isinstance(data, VecsetDataModule) and data.predictor is not None and data.predict_table() is not None
                and isinstance(ckpt, str) and Path(ckpt).is_file()):
            return self.trainer.predict(**kwargs)
        parser = self._parser(self.subcommand)
        dumped = parser.dump(self._subcommand_config(), skip_none=False)
        out_dir = Path(self.trainer.log_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "config.yaml").write_text(dumped)  # as SaveConfigCallback saves a run's
        path = predict_table(data, ckpt, yaml.safe_load(dumped), out_dir, str(out_dir / "config.yaml"))
        print(f"predictions: {path}")
        return None

    def after_fit(self) -> None:
        trainer, model, dm = self.trainer, self.model, self.datamodule
        ckpt_cb = trainer.checkpoint_callback
        best = ckpt_cb.best_model_path if ckpt_cb is not None and ckpt_cb.best_model_path else None
        last = last_checkpoint_path(trainer)
        wall = time.time() - self._t0
        clock = next((c for c in trainer.callbacks if isinstance(c, TrainingClock)), None)
        setup = (clock.started - self._t0) if clock is not None and clock.started is not None else None
        test = trainer.test(model, datamodule=dm, ckpt_path=best or None, verbose=True)
        run_dir = Path(trainer.log_dir)  # a broadcast under DDP: every process must call it
        if not trainer.is_global_zero:
            return
        absolute = lambda p: str(Path(p).resolve()) if p else None  # noqa: E731
        results = {
            "config": absolute(run_dir / "config.yaml"),
            "checkpoint": absolute(best),
            "last_checkpoint": absolute(last),
            "monitor": ckpt_cb.monitor if ckpt_cb is not None else None,
            "best_val": float(ckpt_cb.best_model_score) if ckpt_cb is not None and ckpt_cb.best_model_score is not None else None,
            # one dict per test dataloader (several in multi-task runs): merged
            "test": {k: float(v) for d in test for k, v in d.items()},
            "epochs": trainer.current_epoch,
            "global_steps": trainer.global_step,
            # wall = setup (the data module's setup: featurization, reading) + training
            "wall_seconds": round(wall, 2),
            "setup_seconds": None if setup is None else round(setup, 2),
            "train_seconds": None if setup is None else round(wall - setup, 2),
            **self.precision_choice.as_dict(),  # "precision" (what ran) and "precision_reason"
        }
        found = next((c.lr for c in trainer.callbacks if isinstance(c, FoundLearningRate)), None)
        if found is not None:  # a LearningRateFinder's, which every step used (config.yaml holds it too)
            results["lr_found"] = found
        writer = next((c for c in trainer.callbacks if isinstance(c, ReportWriter)), None)
        if writer is not None:  # it wrote them at the end of the test above
            results["plots"] = [str(p) for p in writer.written]
            if writer.failed:  # each named in a warning when it failed
                results["failed_reports"] = writer.failed
        from vecset.pipelines.training.multitask import MultiTaskModule, task_table

        if isinstance(model, MultiTaskModule):
            results["per_task"], text = task_table(results["test"], model.tasks)
            print(text)
        path = run_dir / "results.json"
        path.write_text(json.dumps(results, indent=2))
        print(f"results: {path}")


def names_a_class_by_its_short_name(argv: list[str]) -> bool:
    """A class given by its bare name (``--data MoleculeDataModule``, or a bare name as a class_path
    in a config file): LightningCLI finds it among the imported subclasses only."""
    bare = re.compile(r"class_path[\"']?\s*:\s*[\"']?[A-Za-z_]\w*[\"']?\s*(#.*)?$", re.M)
    for i, a in enumerate(argv):
        value = a.split("=", 1)[-1]
        if re.fullmatch(r"[A-Z]\w*", value) or bare.search(value):
            return True
        if i and argv[i - 1] in ("--config", "-c") and Path(a).is_file() and bare.search(Path(a).read_text()):
            return True
    return False


def run_cli(args: list[str] | None = None, run: bool = True) -> VecsetCLI:
    argv = sys.argv[1:] if args is None else args
    # a config by name (``--config solubility``): the shipped file (vecset/shipped.py)
    try:
        argv = with_shipped_configs(argv)
    except FileNotFoundError as e:  # neither a file nor a shipped config: one line, as a setting's error
        sys.stderr.write(f"error: {e}\n")
        raise SystemExit(2) from None
    argv = last_checkpoint_named(argv, Path(RUNS_DIR) / config_name(argv))
    if args is None:
        sys.argv[1:] = argv
    else:
        args = argv
    if names_a_class_by_its_short_name(argv):
        # vecset.pipelines' names are lazy (a run imports its own job's code only): all of them
        # imported, LightningCLI finds a short name among their subclasses
        vecset.pipelines.import_all()
    name = config_name(argv)
    resumed = None
    own_run = "VECSET_RUN_VERSION" not in os.environ  # not a DDP child: this process claims the directory
    # one run directory for every process of a run (DDP children inherit the environment)
    if own_run:
        # --ckpt_path last continues the newest run directory with a last checkpoint, a fit from
        # a run directory's checkpoint file that directory; a new run claims one when its
        # loggers are made (default_loggers)
        in_run = resumed_run(argv, Path(RUNS_DIR))
        name = in_run[0] if in_run is not None else name
        os.environ["VECSET_RUN_NAME"] = name
        resumed = in_run[1] if in_run is not None else resumed_version(argv, Path(RUNS_DIR) / name)
        if resumed is not None:
            os.environ["VECSET_RUN_VERSION"] = str(resumed)
    try:
        with warnings.catch_warnings():
            resuming = wants_last_checkpoint(argv) or resumed_run(argv, Path(RUNS_DIR)) is not None
            silence_inapplicable_advice(resuming=resuming)
            cli = VecsetCLI(
                pl.LightningModule,  # TaskModule, MultiTaskModule, or a user's own, by class_path
                subclass_mode_model=True,
                subclass_mode_data=True,
                save_config_kwargs={"overwrite": True},
                seed_everything_default=0,
                args=args,
                run=run,
                resumes=Path(RUNS_DIR) / name / f"version_{resumed}" if resumed is not None else None,
            )
            if run:
                end_process_group()
            return cli
    except BaseException as ex:
        # a new run that failed before writing anything (e.g. at data setup) leaves no empty
        # run directory, which --ckpt_path last would take for the newest
        if own_run and resumed is None and "VECSET_RUN_VERSION" in os.environ:
            version_dir = Path(RUNS_DIR) / name / f"version_{os.environ['VECSET_RUN_VERSION']}"
            if remove_unused_run_dir(version_dir):
                for folder in (version_dir.parent, version_dir.parent.parent):  # runs/<name>, runs: when empty
                    if folder.is_dir() and not any(folder.iterdir()):
                        folder.rmdir()
        if isinstance(ex, SettingError) and not debug_mode():
            # a setting found wrong once the run started: its one line, as a constructor's error
            sys.stderr.write(f"error: {ex}\n  ({DEBUG_ENV}=true shows the traceback)\n")
            raise SystemExit(2) from None
        # a data file a data module could not read (pipelines/data_errors.py): its one line too
        report = None if debug_mode() or not isinstance(ex, Exception) else data_error(ex)
        if report is not None:
            sys.stderr.write("".join(f"{line}\n" for line in report.lines()))
            raise SystemExit(2) from None
        raise
    finally:
        if args is not None:
            os.environ.pop("VECSET_RUN_VERSION", None)
            os.environ.pop("VECSET_RUN_NAME", None)

