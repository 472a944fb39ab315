"""Lightning pipelines: TaskModule, DataModules, the prediction writer, the CLI, plots."""

from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.data.cmudict import CMUDictDataModule
from vecset.pipelines.data.conllu import CoNLLUDataModule
from vecset.pipelines.data.fashion_mnist import FashionMNISTDataModule
from vecset.pipelines.data.graphs import GraphNodeDataModule  # noqa: E402
from vecset.pipelines.data.images import Cifar10DataModule, DigitsDataModule, ImageFolderDataModule
from vecset.pipelines.data.kernel_regression import KernelRegressionDataModule
from vecset.pipelines.data.molecules import MoleculeDataModule  # noqa: E402
from vecset.pipelines.data.samplers import ResumableSampler
from vecset.pipelines.data.speech import SpeechFramesDataModule
from vecset.pipelines.data.synthetic import SyntheticSetDataModule
from vecset.pipelines.predict.writer import PredictionWriter
from vecset.pipelines.pretrained import pretrained
from vecset.pipelines.training.callbacks import NonFiniteGuard, ResumeState
from vecset.pipelines.training.checkpoint import AtomicCheckpointIO, StepCheckpoint
from vecset.pipelines.training.elapsed import ElapsedTime
from vecset.pipelines.training.multitask import MultiTaskDataModule, MultiTaskModule
from vecset.pipelines.training.task import TaskModule

__all__ = [
    "AtomicCheckpointIO", "CMUDictDataModule", "Cifar10DataModule", "CoNLLUDataModule",
    "DigitsDataModule", "ElapsedTime", "FashionMNISTDataModule", "GraphNodeDataModule", "ImageFolderDataModule",
    "KernelRegressionDataModule", "MoleculeDataModule", "MultiTaskDataModule", "MultiTaskModule",
    "NonFiniteGuard", "PredictionWriter", "ResumableSampler", "ResumeState", "SpeechFramesDataModule", "StepCheckpoint",
    "SyntheticSetDataModule", "TaskModule", "VecsetDataModule", "pretrained",
]
