"""Lightning pipelines: TaskModule, DataModules, the CLI, plots."""

from pipelines.conllu_data import CoNLLUDataModule
from pipelines.datamodule import VecsetDataModule
from pipelines.g2p import CMUDictDataModule
from pipelines.graphs import GraphNodeDataModule  # noqa: E402
from pipelines.kernel_regression import KernelRegressionDataModule
from pipelines.molecules import MoleculeDataModule  # noqa: E402
from pipelines.multitask import MultiTaskDataModule, MultiTaskModule
from pipelines.synthetic import SyntheticSetDataModule
from pipelines.task import TaskModule

__all__ = [
    "GraphNodeDataModule", "MoleculeDataModule", "MultiTaskDataModule", "MultiTaskModule",
    "SyntheticSetDataModule", "TaskModule", "VecsetDataModule",
    "CMUDictDataModule", "CoNLLUDataModule", "KernelRegressionDataModule",
]
