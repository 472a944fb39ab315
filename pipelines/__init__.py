"""Lightning pipelines: TaskModule, DataModules, the CLI, plots."""

from pipelines.datamodule import VecsetDataModule
from pipelines.images import Cifar10DataModule, DigitsDataModule, ImageFolderDataModule
from pipelines.synthetic import SyntheticSetDataModule
from pipelines.task import TaskModule

__all__ = [
    "Cifar10DataModule", "DigitsDataModule", "ImageFolderDataModule", "SyntheticSetDataModule",
    "TaskModule", "VecsetDataModule",
]
