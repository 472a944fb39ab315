"""Refusing a resume that would continue another run: a run folder whose saved config.yaml has
other data or model settings than this command's, or (``--ckpt_path last``) a finished run.
"""

from __future__ import annotations

import re
from pathlib import Path

from vecset.pipelines.config_errors import SettingError
from vecset.pipelines.training.checkpoint_fit import (
    flat_settings,
    hparams_mismatch,
    same_class,
)
from vecset.pipelines.training.run_folders import taken_versions

# data settings that change how the data is loaded or cached, not what it is: a resume may change them
LOADING_ONLY = {"num_workers", "on_device", "device_memory_share", "cache", "cache_dir", "predict_files"}


def data_mismatch(saved: dict, current: dict) -> list[str]:
    """Differences between a run's saved ``data`` config (config.yaml) and this command's: the
    class, then arguments present in both with different values, but ``LOADING_ONLY``."""
    if not same_class(saved.get("class_path"), current.get("class_path")):
        return [f"data.class_path: the run has {saved.get('class_path')!r}, the config has {current.get('class_path')!r}"]
    a, b = flat_settings(saved.get("init_args") or {}), flat_settings(current.get("init_args") or {})
    return [f"data.init_args.{k}: the run has {a[k]!r}, the config has {b[k]!r}" for k in sorted(set(a) & set(b))
            if k.rsplit(".", 1)[-1] not in LOADING_ONLY and a[k] != b[k]]


def _model_hparams(model: dict) -> dict:
    """A config's ``model`` section in a checkpoint's hyperparameter form (``hparams_mismatch``)."""
    return {**(model.get("init_args") or {}), "_class_path": model.get("class_path")}


def check_resume(run_dir: Path, config: dict, ckpt_path: str, runs_of_job: Path | None = None) -> None:
    """Refuse a fit that would continue ``run_dir`` (``--ckpt_path last``, or a checkpoint file in
    it) when it is another run: its saved config.yaml has other data or model settings than
    ``config`` (this command's, as a run saves it; learning rate and the like may differ,
    ``TRAINING_ONLY``), or, for ``last``, when the run finished (its results.json is there): a
    resume would rewrite its config.yaml, trim its metrics and replace its results. Naming a
    finished run's checkpoint file continues it (to train it further), saying so. Raises
    ``SettingError`` (one ``error:`` line, exit 2) before anything is written."""
    run_dir = Path(run_dir)
    saved_file = run_dir / "config.yaml"
    diffs: list[str] = []
    if saved_file.is_file():
        import yaml

        saved = yaml.safe_load(saved_file.read_text()) or {}
        diffs = data_mismatch(saved.get("data") or {}, config.get("data") or {})
        for d in hparams_mismatch(_model_hparams(saved.get("model") or {}), _model_hparams(config.get("model") or {})):
            d = d.replace(": checkpoint has", ": the run has", 1)  # "model.<part>...": as the config spells it
            diffs.append(d if d.startswith("model.class_path") else d.replace("model.", "model.init_args.", 1))
    # the newer runs of the job that --ckpt_path last passed over (resumed_version): each stopped
    # before its first checkpoint
    n = int(run_dir.name.split("_")[1]) if re.fullmatch(r"version_\d+", run_dir.name) else None
    skipped = (sorted(v for v in taken_versions(runs_of_job) if v > n)
               if ckpt_path == "last" and runs_of_job is not None and n is not None else [])
    note = (f" ({', '.join(str(Path(runs_of_job) / f'version_{v}') for v in skipped)}, newer, holds no checkpoint: "
            "it stopped before its first one and has nothing to resume)") if skipped else ""
    if diffs:
        raise SettingError(
            f"--ckpt_path {ckpt_path}: {run_dir} is another run, with other data or model settings than this "
            f"command's: {'; '.join(diffs)}{note}. A resume continues a run with its own settings; for a new "
            "run leave --ckpt_path out")
    if (run_dir / "results.json").is_file():
        if ckpt_path == "last":
            raise SettingError(
                f"--ckpt_path last: {run_dir} finished (its results.json is there): there is nothing to resume"
                f"{note}. For a new run leave --ckpt_path out; to train that run further, name its checkpoint "
                f"(--ckpt_path {run_dir / 'checkpoints' / 'last.ckpt'}) with a larger --trainer.max_epochs or max_steps")
        print(f"vecset: {run_dir} had finished; it continues from {ckpt_path}, and its results.json and the metrics "
              "logged after that checkpoint are replaced", flush=True)
