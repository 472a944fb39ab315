"""Lightning pipelines: TaskModule, DataModules, the CLI, plots."""

from pipelines.callbacks import NonFiniteGuard, ResumeState
from pipelines.checkpoint import AtomicCheckpointIO, StepCheckpoint
from pipelines.datamodule import VecsetDataModule
from pipelines.graphs import GraphNodeDataModule  # noqa: E402
from pipelines.molecules import MoleculeDataModule  # noqa: E402
from pipelines.multitask import MultiTaskDataModule, MultiTaskModule
from pipelines.samplers import ResumableSampler
from pipelines.synthetic import SyntheticSetDataModule
from pipelines.task import TaskModule

__all__ = [
    "AtomicCheckpointIO", "NonFiniteGuard", "ResumableSampler", "ResumeState", "StepCheckpoint",
    "GraphNodeDataModule", "MoleculeDataModule", "MultiTaskDataModule", "MultiTaskModule",
    "SyntheticSetDataModule", "TaskModule", "VecsetDataModule",
]
