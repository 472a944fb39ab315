"""Lightning pipelines: TaskModule, DataModules, the CLI, plots."""

from pipelines.datamodule import VecsetDataModule
from pipelines.synthetic import SyntheticSetDataModule
from pipelines.task import TaskModule

__all__ = ["SyntheticSetDataModule", "TaskModule", "VecsetDataModule"]
from pipelines.molecules import MoleculeDataModule  # noqa: E402

__all__ += ["MoleculeDataModule"]
from pipelines.graphs import GraphNodeDataModule  # noqa: E402

__all__ += ["GraphNodeDataModule"]
