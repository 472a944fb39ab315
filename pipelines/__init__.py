"""Lightning pipelines: TaskModule, DataModules, the prediction writer, the CLI, plots."""

from vecset.pipelines import moved
from vecset.pipelines.data.base import VecsetDataModule
from vecset.pipelines.data.multitask import MultiTaskDataModule
from vecset.pipelines.data.samplers import ResumableSampler
from vecset.pipelines.data.synthetic import SyntheticSetDataModule
from vecset.pipelines.graphs.data import GraphNodeDataModule  # noqa: E402
from vecset.pipelines.images.data import Cifar10DataModule, DigitsDataModule, ImageFolderDataModule
from vecset.pipelines.images.fashion_mnist import FashionMNISTDataModule
from vecset.pipelines.kernel_regression.data import KernelRegressionDataModule
from vecset.pipelines.molecules.data import MoleculeDataModule  # noqa: E402
from vecset.pipelines.predict.writer import PredictionWriter
from vecset.pipelines.pretrained import pretrained
from vecset.pipelines.speech.data import SpeechFramesDataModule
from vecset.pipelines.text.cmudict import CMUDictDataModule
from vecset.pipelines.text.conllu import CoNLLUDataModule
from vecset.pipelines.training.callbacks import NonFiniteGuard, ResumeState
from vecset.pipelines.training.checkpoint import AtomicCheckpointIO, StepCheckpoint
from vecset.pipelines.training.compile import CompileModel
from vecset.pipelines.training.elapsed import ElapsedTime
from vecset.pipelines.training.multitask import MultiTaskModule
from vecset.pipelines.training.task import TaskModule

__all__ = [
    "AtomicCheckpointIO", "CMUDictDataModule", "Cifar10DataModule", "CoNLLUDataModule", "CompileModel",
    "DigitsDataModule", "ElapsedTime", "FashionMNISTDataModule", "GraphNodeDataModule", "ImageFolderDataModule",
    "KernelRegressionDataModule", "MoleculeDataModule", "MultiTaskDataModule", "MultiTaskModule",
    "NonFiniteGuard", "PredictionWriter", "ResumableSampler", "ResumeState", "SpeechFramesDataModule", "StepCheckpoint",
    "SyntheticSetDataModule", "TaskModule", "VecsetDataModule", "pretrained",
]

moved.install()  # the old module paths of the files now in the job folders keep importing
