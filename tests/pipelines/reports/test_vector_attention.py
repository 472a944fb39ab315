"""attention.png of the karate (graph nodes) and POS (words) tasks: one block's attention
between the vectors of one test sample, rows and columns labelled, with a colour bar."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from vecset.backbone import Backbone
from vecset.encoders import GraphEncoder, TextEncoder
from vecset.heads import LabelingHead
from vecset.pipelines.graphs.data import GraphNodeDataModule
from vecset.pipelines.reports.base import ReportContext, plt
from vecset.pipelines.reports.defaults import default_reports
from vecset.pipelines.reports.vector_attention import (
    VectorAttentionReport,
    attention_heatmap,
    attention_matrix,
)
from vecset.pipelines.text.conllu import CoNLLUDataModule
from vecset.pipelines.training.hand_over import hand_over
from vecset.pipelines.training.task import TaskModule

ROOT = Path(__file__).resolve().parents[3]


def karate(cls_token: bool = False) -> tuple[TaskModule, GraphNodeDataModule]:
    torch.manual_seed(0)
    dm = GraphNodeDataModule(seed=0, lap_pe_k=2)  # configs/karate.yaml's data and model, untrained
    dm.setup("test")
    enc = GraphEncoder(d_model=32, node_dim=1, attention="neighbours", heads=4, max_dist=8, num_edge_types=2,
                       max_degree=16, lap_pe_k=2, lap_sign_flip=False)
    return TaskModule(enc, Backbone(32, 2, 4, 2.0, cls_token=cls_token), LabelingHead(32, 2)), dm


def test_karate_attention_between_the_nodes(tmp_path, monkeypatch):
    model, dm = karate()
    assert any(isinstance(r, VectorAttentionReport) for r in default_reports(dm))
    batch, labels, unit, source = dm.attention_example()
    assert unit == "node" and len(labels) == 34 and labels[0] == "0 Mr. Hi" and labels[33] == "33 Officer"
    assert source == "networkx.karate_club_graph() (34 nodes)"
    weights, heads = attention_matrix(model, batch, layer=-1, max_vectors=60)
    model.eval()
    with torch.no_grad():
        ref = model.backbone.attention_weights(model.encoder(batch), layer=-1)[0].mean(0).numpy()  # (34, 34)
    assert heads == 4 and weights.shape == (34, 34)
    np.testing.assert_allclose(weights, ref, atol=1e-6)
    np.testing.assert_allclose(weights.sum(1), 1.0, atol=1e-5)
    # neighbour-only attention: a node attends to itself and its neighbours only
    import networkx as nx
    adj = nx.to_numpy_array(nx.karate_club_graph()) + np.eye(34)
    assert (weights[adj == 0] == 0).all()
    figs = []
    monkeypatch.setattr(plt, "close", lambda fig: figs.append(fig))  # keep the figure to read it
    (path,) = VectorAttentionReport().write(ReportContext(model, dm, tmp_path))
    assert path == tmp_path / "attention.png" and path.stat().st_size > 10_000
    ax, bar = figs[0].axes  # the heatmap and its colour bar
    assert [t.get_text() for t in ax.get_xticklabels()] == labels == [t.get_text() for t in ax.get_yticklabels()]
    assert bar.get_ylabel() == "attention weight"
    assert ax.get_title().startswith("block -1 attention, mean over 4 heads: each row is a query node")
    assert ax.get_ylabel() == "query node (attending)" and ax.get_xlabel() == "key node (attended to)"
    np.testing.assert_allclose(ax.images[0].get_array(), weights)


def test_a_cls_vector_gets_its_own_row_and_column(tmp_path, monkeypatch):
    model, dm = karate(cls_token=True)
    figs = []
    monkeypatch.setattr(plt, "close", lambda fig: figs.append(fig))
    VectorAttentionReport().write(ReportContext(model, dm, tmp_path))
    ticks = [t.get_text() for t in figs[0].axes[0].get_yticklabels()]
    assert len(ticks) == 35 and ticks[:2] == ["CLS", "0 Mr. Hi"]


def test_pos_attention_between_a_sentences_words(tmp_path, monkeypatch):
    sample = str(ROOT / "data" / "conllu" / "sample.conllu")
    dm = CoNLLUDataModule(sample, sample, sample)
    dm.setup("fit")
    torch.manual_seed(0)
    enc = TextEncoder(d_model=32, level="word", embedding="learned", positional="sinusoidal", lowercase=True)
    head = LabelingHead(32, 17)
    hand_over(dm, "fit", enc, head)  # the vocabulary
    model = TaskModule(enc, Backbone(32, 2, 4, 2.0), head)
    assert any(isinstance(r, VectorAttentionReport) for r in default_reports(dm))
    batch, labels, unit, source = dm.attention_example()
    forms = dm.splits["test"][0]["forms"]
    assert unit == "word" and labels[:2] == ["I PRON", "saw VERB"] and len(labels) == len(forms)
    assert source.startswith(f"{sample}:") and source.endswith(" ".join(forms))
    figs = []
    monkeypatch.setattr(plt, "close", lambda fig: figs.append(fig))
    (path,) = VectorAttentionReport().write(ReportContext(model, dm, tmp_path))
    ax = figs[0].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == labels
    assert "each row is a query word" in ax.get_title() and ax.images[0].get_array().shape == (len(labels),) * 2


def test_at_most_max_vectors_are_drawn_and_the_title_says_so(tmp_path, monkeypatch):
    model, dm = karate()
    figs = []
    monkeypatch.setattr(plt, "close", lambda fig: figs.append(fig))
    VectorAttentionReport(max_vectors=10).write(ReportContext(model, dm, tmp_path))
    ax = figs[0].axes[0]
    assert ax.images[0].get_array().shape == (10, 10) and "(the first 10 of 34 nodes)" in ax.get_title()


def test_a_backbone_without_attention_writes_nothing(tmp_path):
    _, dm = karate()
    model = TaskModule(GraphEncoder(d_model=8, node_dim=1, lap_pe_k=2), torch.nn.Identity(), LabelingHead(8, 2))
    assert VectorAttentionReport().write(ReportContext(model, dm, tmp_path)) == []


@pytest.mark.parametrize("n", [5, 80])
def test_heatmap_labels_every_row_and_column(n):
    fig = attention_heatmap(np.full((n, n), 1.0 / n), [f"w{i}" for i in range(n)], "word", "t")
    ax = fig.axes[0]
    assert len(ax.get_xticklabels()) == n and ax.get_yticklabels()[-1].get_text() == f"w{n - 1}"
    plt.close(fig)
