"""Lightning pipelines: TaskModule, DataModules, the CLI, plots."""

from pipelines.datamodule import VecsetDataModule
from pipelines.speech import SpeechFramesDataModule
from pipelines.synthetic import SyntheticSetDataModule
from pipelines.task import TaskModule

__all__ = ["SyntheticSetDataModule", "TaskModule", "VecsetDataModule", "SpeechFramesDataModule"]
