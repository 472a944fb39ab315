"""Lightning pipelines: TaskModule, DataModules, the CLI, plots."""

from pipelines.datamodule import VecsetDataModule
from pipelines.multitask import MultiTaskDataModule, MultiTaskModule
from pipelines.speech import SpeechFramesDataModule
from pipelines.synthetic import SyntheticSetDataModule
from pipelines.task import TaskModule

__all__ = [
    "MultiTaskDataModule", "MultiTaskModule", "SyntheticSetDataModule", "TaskModule", "VecsetDataModule",
    "SpeechFramesDataModule",
]
