"""Speech reports: the per-phone report (boundaries, the logged test accuracy), the segments
picture, the attention over a long windowed utterance (CPU, tiny)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytorch_lightning as pl
import torch

from vecset.backbone import Backbone, WindowMLP
from vecset.encoders.collate import pad_sets
from vecset.encoders.speech import SpeechEncoder
from vecset.heads import LabelingHead
from vecset.pipelines.reports.base import ReportContext
from vecset.pipelines.reports.defaults import default_reports
from vecset.pipelines.speech.data import SpeechFramesDataModule
from vecset.pipelines.speech.options import SpeechSplits
from vecset.pipelines.speech.reports import (
    FrameAttentionReport,
    PerPhoneReport,
    SegmentsReport,
    boundary_frames,
    per_phone_report,
)
from vecset.pipelines.training.task import TaskModule

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "speech"


def test_boundary_frames_and_the_report_split_errors(tmp_path):
    y = np.array([3, 3, 3, 5, 5, 7, 7, 7, 7])
    assert boundary_frames(y).tolist() == [False, False, True, True, True, True, False, False, False]
    assert boundary_frames(np.array([4])).tolist() == [False]
    names = SpeechFramesDataModule(root=str(SAMPLE)).class_names
    # one error at a boundary (frame 2), one inside (frame 7); frame 8 is ignored (-1)
    y = np.array([3, 3, 3, 5, 5, 7, 7, 7, -1])
    p = np.array([3, 3, 5, 5, 5, 7, 7, 3, 3])
    per_phone_report([(0, p, y)], names, tmp_path)
    rep = json.loads((tmp_path / "test_per_phone.json").read_text())
    assert rep["frames"] == 8 and rep["frame_accuracy"] == 0.75
    assert rep["boundary_frames"] == 4 and rep["frame_accuracy_at_boundaries"] == 0.75
    assert rep["frame_accuracy_inside_phones"] == 0.75 and rep["share_of_errors_at_boundaries"] == 0.5


def _model(backbone: torch.nn.Module | None = None) -> TaskModule:
    torch.manual_seed(0)
    return TaskModule(SpeechEncoder(40, 16, positional="none", window=4),
                      backbone or Backbone(16, depth=1, heads=2, mlp_ratio=1.0), LabelingHead(16, 50))


@pytest.fixture(scope="module")
def speech_test() -> SpeechFramesDataModule:
    dm = SpeechFramesDataModule(root=str(SAMPLE), batch_size=1, splits=SpeechSplits(max_utterances=2))
    dm.setup("test")
    return dm


def test_per_phone_report_scores_the_frames_the_test_accuracy_counts(tmp_path, speech_test):
    model = _model()
    trainer = pl.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False)
    acc = trainer.test(model, datamodule=speech_test, verbose=False)[0]["test_acc"]
    model.train()
    ctx = ReportContext(model, speech_test, tmp_path)
    paths = [p for r in (PerPhoneReport(), SegmentsReport(utterances=2), FrameAttentionReport()) for p in r.write(ctx)]
    assert [p.name for p in paths] == ["test_per_phone.json", "speech_segments.png", "attention.png"]
    rep = json.loads((tmp_path / "test_per_phone.json").read_text())
    frames = sum(len(u.x) for u in speech_test.test_items())
    assert rep["frames"] == frames and rep["frame_accuracy"] == round(acc, 4)
    assert (tmp_path / "test_per_phone.csv").read_text().startswith("phone,frames,accuracy")
    assert all(p.stat().st_size > 1000 for p in paths[1:])
    assert model.training and all(m.training for m in model.modules())  # as the report found it


def test_no_attention_picture_for_a_backbone_without_attention(tmp_path, speech_test):
    model = _model(WindowMLP(16, context=2))
    assert FrameAttentionReport().write(ReportContext(model, speech_test, tmp_path)) == []
    # the job's defaults: per-phone scores, segments of 3 utterances, the attention picture
    defaults = default_reports(SpeechFramesDataModule())
    assert [type(r) for r in defaults] == [PerPhoneReport, SegmentsReport, FrameAttentionReport]
    assert defaults[1].utterances == 3


def test_attention_plot_of_a_long_windowed_utterance_expands_only_the_plotted_frames(tmp_path, monkeypatch):
    """A windowed layer keeps its band: the plot expands max_frames query rows, never T x T."""
    import types

    import matplotlib.axes

    import vecset.backbone.attention.memory as A

    T = 4000  # T x T weights of 2 heads: 128 MB; 300 rows of them: 9.6 MB
    model = TaskModule(SpeechEncoder(40, 8, positional="none", window=4),  # the encoder's window
                       Backbone(8, depth=1, heads=2, mlp_ratio=1.0), LabelingHead(8, 50))
    item = types.SimpleNamespace(id=7, x=torch.randn(T, 40), y=None)  # an Utterance's fields: unlabelled
    dm = types.SimpleNamespace(test_items=lambda: [item], describe=lambda i: f"utt {i}", collate=pad_sets)
    monkeypatch.setattr(A, "available_memory", lambda device: 32 * 2**20)  # pretend 32 MiB free
    titles = []
    set_title = matplotlib.axes.Axes.set_title
    monkeypatch.setattr(matplotlib.axes.Axes, "set_title", lambda ax, t, **kw: titles.append(t) or set_title(ax, t, **kw))
    (out,) = FrameAttentionReport(max_frames=300).write(ReportContext(model, dm, tmp_path))
    assert out.name == "attention.png" and out.stat().st_size > 1000
    assert "window=4" in titles[0]  # the window that applied: the encoder's, not the backbone's None
