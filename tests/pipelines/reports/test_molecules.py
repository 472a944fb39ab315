"""The molecule reports: atoms coloured by pooling attention (only for attention pooling),
the model's training mode left as it was (the old plot left it in eval mode)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from vecset.backbone import Backbone
from vecset.encoders.graph import GraphEncoder
from vecset.heads import SequenceHead
from vecset.pipelines.molecules.data import MoleculeDataModule
from vecset.pipelines.molecules.reports import PoolingAttentionReport, pooling_weights
from vecset.pipelines.reports.base import ReportContext
from vecset.pipelines.reports.defaults import default_reports
from vecset.pipelines.reports.regression import ParityReport
from vecset.pipelines.reports.uncertainty import UncertaintyReport
from vecset.pipelines.training.task import TaskModule

FREESOLV = Path(__file__).resolve().parents[3] / "data" / "molecules" / "freesolv.csv"


@pytest.fixture(scope="module")
def molecules(tmp_path_factory) -> MoleculeDataModule:
    path = tmp_path_factory.mktemp("mol") / "fs.csv"
    path.write_text("".join(FREESOLV.read_text().splitlines(keepends=True)[:41]))  # 40 molecules
    dm = MoleculeDataModule(str(path), target_columns=["expt"])
    dm.setup("test")
    return dm


def _model(pooling: str) -> TaskModule:
    torch.manual_seed(0)
    return TaskModule(GraphEncoder(16, node_dim=42, attention="all_pairs", heads=2, lap_pe_k=0),
                      Backbone(16, depth=1, heads=2), SequenceHead(16, 1, task="regression", pooling=pooling))


def test_pooling_attention_of_each_atom_sums_to_one_and_is_drawn(tmp_path, molecules):
    model = _model("attention").train()
    items = molecules.splits["test"][:3]
    weights = pooling_weights(model, items, molecules.collate)
    assert [len(w) for w in weights] == [it["x"].shape[0] for it in items]
    assert all(abs(float(w.sum()) - 1) < 1e-5 for w in weights)
    assert [type(r) for r in default_reports(molecules)] == [ParityReport, UncertaintyReport, PoolingAttentionReport]
    assert UncertaintyReport().write(ReportContext(model, molecules, tmp_path)) == []  # an MSE head has no std
    (path,) = PoolingAttentionReport(molecules=3).write(ReportContext(model, molecules, tmp_path))
    assert path.name == "pool_attention.png" and path.stat().st_size > 1000
    assert all(m.training for m in model.modules())  # as the report found it


def test_no_pooling_attention_for_mean_pooling(tmp_path, molecules):
    assert PoolingAttentionReport().write(ReportContext(_model("mean"), molecules, tmp_path)) == []
    assert not (tmp_path / "pool_attention.png").exists()
