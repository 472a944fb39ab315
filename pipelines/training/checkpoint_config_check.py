"""The LightningCLI mixin that checks ``--ckpt_path`` against the config before anything runs
(``CheckpointConfigCheck``): the resume check, the hparams comparison, and torch's state_dict
load error told as a mismatch naming the file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from vecset.pipelines.training.checkpoint_files import (
    is_checkpoint_file,
    read_checkpoint,
)
from vecset.pipelines.training.checkpoint_fit import (
    EVAL_ONLY,
    CheckpointMismatchError,
    hparams_mismatch,
    mismatch_error,
    state_mismatch,
    with_decode_settings,
)
from vecset.pipelines.training.resume_check import check_resume


class CheckpointConfigCheck:
    """LightningCLI mixin. With ``--ckpt_path FILE`` LightningCLI (2.6, ``_parse_ckpt_path``)
    replaces the model section of the user's config with the hyperparameters stored in the
    checkpoint, so an edited encoder or head would be silently ignored; with ``--ckpt_path
    last`` it builds the config's model and fails inside ``load_state_dict``. Both now fail
    first, listing what differs between the checkpoint and the config.

    This replaces LightningCLI's step (same replacement) where it fell short: it tested the
    path with ``Path.is_file``, so a ``file://`` or ``s3://`` checkpoint was neither checked nor
    used for the config (the config's model got the weights, whatever it was); and the
    replacement also overwrote decode settings given for this run (``beam_size`` at predict
    time) and evaluation settings (``test_time_flip``), which are now kept from the config; and it skipped the module's own class, so a
    MultiTaskModule's checkpoint silently replaced a TaskModule config (NaN losses), which is
    now refused naming both classes."""

    # the run directory this command continues (set by the vecset command for a resumed fit)
    resumes: Path | None = None

    def _parse_ckpt_path(self) -> None:
        sub = self.config.get("subcommand")
        if not sub:
            return
        path = self.config[sub].get("ckpt_path")
        if sub == "fit" and self.resumes is not None:
            # compared as the run saved its config (the same dump), before anything is written
            import yaml

            dumped = yaml.safe_load(self._subcommand_parsers[sub].dump(self.config[sub], skip_unset=False,
                                                                       skip_validation=True))
            check_resume(self.resumes, dumped, str(path), runs_of_job=Path(self.resumes).parent)
        # "last" is resolved by the trainer, which builds the config's model (as LightningCLI)
        from_config = path == "last"
        if from_config:
            path = self._newest_last_checkpoint(self.config[sub])
        if not path or not is_checkpoint_file(path):
            return  # Lightning's other names (best, hpc) and missing files: Lightning says
        saved = dict(read_checkpoint(path).get("hyper_parameters") or {})
        model = self.config[sub].get("model")
        config = model.as_dict() if hasattr(model, "as_dict") else dict(model or {})
        current = dict(config.get("init_args") or {})
        if "class_path" in config:  # the module's class: compared too
            current["_class_path"] = config["class_path"]
        diffs = hparams_mismatch(saved, current)
        if diffs:
            raise mismatch_error(path, diffs)
        saved.pop("_instantiator", None)
        if from_config or not saved:
            return
        # as LightningCLI: the model is built from the checkpoint's hyperparameters
        # but this run's decode and evaluation settings (beam_size, test_time_flip)
        hparams = with_decode_settings(saved, current) | {k: current[k] for k in EVAL_ONLY if k in current}
        if "_class_path" in hparams:
            hparams = {"class_path": hparams.pop("_class_path"), "dict_kwargs": hparams}
        try:
            self.config = self.parser.parse_object({sub: {"model": hparams}}, self.config)
        except SystemExit:
            sys.stderr.write("Parsing of ckpt_path hyperparameters failed!\n")
            raise

    def _run_subcommand(self, subcommand: str) -> None:
        """LightningCLI's, with torch's "Error(s) in loading state_dict" (the missing and
        unexpected parameter names, without the file) told as a ``CheckpointMismatchError``
        naming the checkpoint: its config matched (checked above), its parameters did not (a
        checkpoint of code whose parameters had other names). Compared after the failed load,
        when modules that build parameters from a checkpoint's vocabulary have built them."""
        try:
            super()._run_subcommand(subcommand)
        except RuntimeError as e:
            path = self.trainer.ckpt_path
            if "Error(s) in loading state_dict" not in str(e) or not path or not is_checkpoint_file(path):
                raise
            diffs = state_mismatch(read_checkpoint(path)["state_dict"], self.trainer.lightning_module)
            if not diffs:
                raise
            raise CheckpointMismatchError(
                f"the weights in checkpoint {path} do not fit the model of this config, although its "
                "config does:\n  - " + "\n  - ".join(diffs) + "\nThe checkpoint was written by code whose "
                "parameters had other names or shapes (another vecset version?): use that version, or "
                "rename the keys of its state_dict.") from None

    @staticmethod
    def _newest_last_checkpoint(cfg) -> str | None:
        """Where ``--ckpt_path last`` will look: the run directory's ``checkpoints/`` (the
        CLI's VECSET_RUN_NAME/VECSET_RUN_VERSION under runs/); Lightning takes the newest
        ``last*.ckpt`` there."""
        name, version = os.environ.get("VECSET_RUN_NAME"), os.environ.get("VECSET_RUN_VERSION")
        if name is None or version is None:
            return None
        found = list((Path("runs") / name / f"version_{version}" / "checkpoints").glob("last*.ckpt"))
        return str(max(found, key=lambda p: p.stat().st_mtime)) if found else None
