"""Lightning pipelines: TaskModule, DataModules, the CLI, plots."""

from pipelines.callbacks import NonFiniteGuard, ResumeState
from pipelines.checkpoint import AtomicCheckpointIO, StepCheckpoint
from pipelines.datamodule import VecsetDataModule
from pipelines.multitask import MultiTaskDataModule, MultiTaskModule
from pipelines.samplers import ResumableSampler
from pipelines.synthetic import SyntheticSetDataModule
from pipelines.task import TaskModule

__all__ = [
    "AtomicCheckpointIO", "NonFiniteGuard", "ResumableSampler", "ResumeState", "StepCheckpoint",
    "MultiTaskDataModule", "MultiTaskModule", "SyntheticSetDataModule", "TaskModule", "VecsetDataModule",
]
