"""Lightning pipelines: TaskModule, DataModules, the prediction writer, the CLI, plots.

Each public name is imported on first use (PEP 562's module ``__getattr__``), so that
``from vecset.pipelines import pretrained`` or ``from vecset.pipelines.pretrained import ...``
(a shipped predictor: torch and the model's parts only) does not import Lightning,
torchmetrics and every job; ``from vecset.pipelines import TaskModule`` and a config's
``class_path: vecset.pipelines.TaskModule`` work as before. ``import_all`` imports every
one (the CLI does: LightningCLI finds a class given by its short name among the imported ones).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vecset.lazy import lazy_names

# eager (it imports torch and numpy only): the name is also its module's, which an import of
# ``vecset.pipelines.pretrained`` would otherwise bind here in the function's place
from vecset.pipelines.pretrained import pretrained

if TYPE_CHECKING:  # for type checkers and editors; at run time ``__getattr__`` below
    from vecset.pipelines.data.base import VecsetDataModule
    from vecset.pipelines.data.multitask import MultiTaskDataModule
    from vecset.pipelines.data.samplers import ResumableSampler
    from vecset.pipelines.data.synthetic import SyntheticSetDataModule
    from vecset.pipelines.graphs.data import GraphNodeDataModule
    from vecset.pipelines.images.cifar10 import Cifar10DataModule
    from vecset.pipelines.images.digits import DigitsDataModule
    from vecset.pipelines.images.fashion_mnist import FashionMNISTDataModule
    from vecset.pipelines.images.folder import ImageFolderDataModule
    from vecset.pipelines.kernel_regression.data import KernelRegressionDataModule
    from vecset.pipelines.molecules.data import MoleculeDataModule
    from vecset.pipelines.molecules.pretrain import MoleculePretrainDataModule
    from vecset.pipelines.molecules.pretrain_stream import MoleculeStreamDataModule
    from vecset.pipelines.predict.writer import PredictionWriter
    from vecset.pipelines.speech.data import SpeechFramesDataModule
    from vecset.pipelines.text.cmudict import CMUDictDataModule
    from vecset.pipelines.text.conllu import CoNLLUDataModule
    from vecset.pipelines.timeseries.data import TimeSeriesDataModule
    from vecset.pipelines.training.callbacks import NonFiniteGuard, ResumeState
    from vecset.pipelines.training.checkpoint import AtomicCheckpointIO, StepCheckpoint
    from vecset.pipelines.training.compile import CompileModel
    from vecset.pipelines.training.elapsed import ElapsedTime
    from vecset.pipelines.training.multitask import MultiTaskModule
    from vecset.pipelines.training.task import TaskModule

# name -> the module that defines it
_SOURCES = {
    "VecsetDataModule": "data.base", "MultiTaskDataModule": "data.multitask", "ResumableSampler": "data.samplers",
    "SyntheticSetDataModule": "data.synthetic", "GraphNodeDataModule": "graphs.data",
    "Cifar10DataModule": "images.cifar10", "DigitsDataModule": "images.digits", "ImageFolderDataModule": "images.folder",
    "FashionMNISTDataModule": "images.fashion_mnist", "KernelRegressionDataModule": "kernel_regression.data",
    "MoleculeDataModule": "molecules.data", "MoleculePretrainDataModule": "molecules.pretrain",
    "MoleculeStreamDataModule": "molecules.pretrain_stream",
    "PredictionWriter": "predict.writer",
    "SpeechFramesDataModule": "speech.data", "CMUDictDataModule": "text.cmudict", "CoNLLUDataModule": "text.conllu",
    "TimeSeriesDataModule": "timeseries.data",
    "NonFiniteGuard": "training.callbacks", "ResumeState": "training.callbacks",
    "AtomicCheckpointIO": "training.checkpoint", "StepCheckpoint": "training.checkpoint",
    "CompileModel": "training.compile", "ElapsedTime": "training.elapsed", "MultiTaskModule": "training.multitask",
    "TaskModule": "training.task",
}

__all__ = [
    "AtomicCheckpointIO", "CMUDictDataModule", "Cifar10DataModule", "CoNLLUDataModule", "CompileModel",
    "DigitsDataModule", "ElapsedTime", "FashionMNISTDataModule", "GraphNodeDataModule", "ImageFolderDataModule",
    "KernelRegressionDataModule", "MoleculeDataModule", "MoleculePretrainDataModule", "MoleculeStreamDataModule", "MultiTaskDataModule", "MultiTaskModule", "NonFiniteGuard",
    "PredictionWriter", "ResumableSampler", "ResumeState", "SpeechFramesDataModule", "StepCheckpoint",
    "SyntheticSetDataModule", "TaskModule", "TimeSeriesDataModule", "VecsetDataModule", "pretrained",
]


__getattr__, __dir__ = lazy_names(__name__, _SOURCES)


def import_all() -> None:
    """Import every public name's module (what ``import vecset.pipelines`` did before the names
    were lazy): LightningCLI resolves a short class name among the imported subclasses."""
    for name in _SOURCES:
        __getattr__(name)

