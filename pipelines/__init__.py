"""Lightning pipelines: TaskModule, DataModules, the CLI, plots."""

from pipelines.callbacks import NonFiniteGuard, ResumeState
from pipelines.checkpoint import AtomicCheckpointIO, StepCheckpoint
from pipelines.conllu_data import CoNLLUDataModule
from pipelines.datamodule import VecsetDataModule
from pipelines.g2p import CMUDictDataModule
from pipelines.graphs import GraphNodeDataModule  # noqa: E402
from pipelines.images import Cifar10DataModule, DigitsDataModule, ImageFolderDataModule
from pipelines.kernel_regression import KernelRegressionDataModule
from pipelines.molecules import MoleculeDataModule  # noqa: E402
from pipelines.multitask import MultiTaskDataModule, MultiTaskModule
from pipelines.samplers import ResumableSampler
from pipelines.speech import SpeechFramesDataModule
from pipelines.synthetic import SyntheticSetDataModule
from pipelines.task import TaskModule

__all__ = [
    "AtomicCheckpointIO", "CMUDictDataModule", "Cifar10DataModule", "CoNLLUDataModule",
    "DigitsDataModule", "GraphNodeDataModule", "ImageFolderDataModule",
    "KernelRegressionDataModule", "MoleculeDataModule", "MultiTaskDataModule", "MultiTaskModule",
    "NonFiniteGuard", "ResumableSampler", "ResumeState", "SpeechFramesDataModule", "StepCheckpoint",
    "SyntheticSetDataModule", "TaskModule", "VecsetDataModule",
]
