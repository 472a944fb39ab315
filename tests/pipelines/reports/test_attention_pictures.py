"""Attention pictures a reader can read: per head or averaged, over the input, a colour bar in
attention weight and a title naming the query; the weights drawn sum to 1 over the keys."""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch

import vecset.pipelines.molecules.reports as molecules
import vecset.pipelines.speech.reports as speech
from vecset.backbone import Backbone
from vecset.encoders import GraphEncoder, PatchEncoder
from vecset.encoders.collate import pad_sets
from vecset.encoders.image import collate_images
from vecset.encoders.speech import SpeechEncoder
from vecset.heads import LabelingHead, SequenceHead
from vecset.pipelines import DigitsDataModule, GraphNodeDataModule, TaskModule
from vecset.pipelines.images.reports import AttentionMapsReport, attention_panels
from vecset.pipelines.molecules.reports import molecule_tile, pooling_attention_figure
from vecset.pipelines.reports.attention_heads import check_heads, pick_heads
from vecset.pipelines.reports.base import ReportContext, plt
from vecset.pipelines.reports.vector_attention import VectorAttentionReport, attention_matrices
from vecset.pipelines.speech.reports import FrameAttentionReport


@pytest.fixture
def figures(monkeypatch) -> list:
    """The figures the reports save, kept open to be read."""
    figs: list = []
    monkeypatch.setattr(plt, "close", lambda fig: figs.append(fig))
    return figs


def colour_bars(fig) -> list:
    return [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]


def test_heads_option_is_checked_and_picks_panels():
    for bad in ("max", [], [0.5]):
        with pytest.raises(ValueError, match="heads="):
            check_heads(bad)
    w = torch.softmax(torch.randn(3, 5, 7), -1)  # (H, Nq, N)
    mean, labels = pick_heads(w, "mean")
    assert mean.shape == (1, 5, 7) and labels == ["mean of 3 heads"]
    torch.testing.assert_close(mean.sum(-1), torch.ones(1, 5))  # a mean of distributions is one
    each, labels = pick_heads(w, "each")
    assert torch.equal(each, w) and labels == ["head 0", "head 1", "head 2"]
    some, labels = pick_heads(w, [2, -3])
    assert torch.equal(some, w[[2, 0]]) and labels == ["head 2", "head 0"]
    with pytest.raises(ValueError, match=r"heads \[3\] out of range: the block has 3 heads"):
        pick_heads(w, [3])


def test_image_maps_per_head_with_a_colour_bar_and_the_cls_query_in_the_title(tmp_path, figures):
    torch.manual_seed(0)
    model = TaskModule(PatchEncoder(1, 16, 2), Backbone(16, depth=2, heads=4, cls_token=True),
                       SequenceHead(16, 10, pooling="cls")).eval()
    dm = DigitsDataModule()
    dm.setup("test")
    grid, _, labels, what = attention_panels(model, collate_images([dm.sets["test"][i] for i in range(2)]),
                                             heads="each")
    assert grid.shape == (2, 4, 4, 4) and labels == [f"head {h}" for h in range(4)]
    torch.testing.assert_close(grid.sum((-2, -1)), torch.ones(2, 4))  # over the image's patches
    assert what == "CLS query, block 1 of 2, each head"
    (path,) = AttentionMapsReport(images=2, heads="each").write(ReportContext(model, dm, tmp_path))
    fig = figures[0]
    (bar,) = colour_bars(fig)
    assert bar.get_ylabel() == "attention weight"
    assert "CLS query, block 1 of 2, each head" in fig.get_suptitle()
    maps = [ax for ax in fig.axes if len(ax.images) == 2]  # the image in grey under its map
    assert len(maps) == 2 * 4 and path.stat().st_size > 5000


def _speech_dm(T: int):
    names = ["h#", "ah", "s"]
    y = torch.tensor([0] * 5 + [1] * 14 + [2] * (T - 19))  # h#, then 'ah' (the longest phone among 30 frames)
    item = types.SimpleNamespace(id=3, x=torch.randn(T, 40), y=y)
    return types.SimpleNamespace(test_items=lambda: [item], describe=lambda i: f"utt {i}", collate=pad_sets,
                                 class_names=names)


def test_speech_attention_row_per_head_over_the_spectrogram(tmp_path, figures, monkeypatch):
    torch.manual_seed(0)
    model = TaskModule(SpeechEncoder(40, 16, positional="none"), Backbone(16, depth=1, heads=2, mlp_ratio=1.0),
                       LabelingHead(16, 3)).eval()
    drawn = []
    pick = speech.pick_heads
    monkeypatch.setattr(speech, "pick_heads", lambda w, heads: drawn.append(pick(w, heads)) or drawn[-1])
    (path,) = FrameAttentionReport(heads="each", max_frames=30).write(ReportContext(model, _speech_dm(40), tmp_path))
    rows, labels = drawn[0]
    assert rows.shape == (2, 40) and labels == ["head 0", "head 1"]
    torch.testing.assert_close(rows.sum(-1), torch.ones(2))  # the query's row, over all 40 key frames
    fig = figures[0]
    (bar,) = colour_bars(fig)
    assert bar.get_ylabel() == "attention weight"
    assert fig.axes[0].get_title().startswith("attention of query frame 11 (phone 'ah'), block 0 of 1, each head")
    assert sum(len(ax.images) == 2 for ax in fig.axes) == 2  # a spectrogram + row panel per head
    # a chosen query frame and the mean: one panel
    FrameAttentionReport(query_frame=30).write(ReportContext(model, _speech_dm(40), tmp_path))
    assert "query frame 30 (phone 's')" in figures[1].axes[0].get_title()
    assert sum(len(ax.images) == 2 for ax in figures[1].axes) == 1 and path.exists()


def test_vector_attention_heatmap_per_head(tmp_path, figures):
    torch.manual_seed(0)
    dm = GraphNodeDataModule(seed=0, lap_pe_k=2)  # configs/karate.yaml's data and model, untrained
    dm.setup("test")
    enc = GraphEncoder(d_model=32, node_dim=1, attention="neighbours", heads=4, max_dist=8, num_edge_types=2,
                       max_degree=16, lap_pe_k=2, lap_sign_flip=False)
    model = TaskModule(enc, Backbone(32, 2, 4, 2.0), LabelingHead(32, 2))
    batch, *_ = dm.attention_example()
    one, labels, H = attention_matrices(model, batch, heads=[1])
    with torch.no_grad():
        ref = model.eval().backbone.attention_weights(model.encoder(batch))[0, 1].numpy()
    assert H == 4 and labels == ["head 1"] and one.shape == (1, 34, 34)
    np.testing.assert_allclose(one[0], ref, atol=1e-6)
    np.testing.assert_allclose(one.sum(-1), 1.0, atol=1e-5)
    VectorAttentionReport(heads="each").write(ReportContext(model, dm, tmp_path))
    fig = figures[0]
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == [f"head {h}" for h in range(4)]
    (bar,) = colour_bars(fig)
    assert bar.get_ylabel() == "attention weight" and "each row is a query node" in fig.get_suptitle()
    assert panels[0].images[0].get_clim() == panels[3].images[0].get_clim()  # one colour scale


def test_molecule_map_reads_the_atoms_weights_on_a_colour_bar(monkeypatch):
    w = np.array([0.1, 0.2, 0.7])
    tile, field = molecule_tile("CCO", w, size=200)
    assert tile.shape == (200, 200, 4) and field.shape == (200, 200)
    assert abs(field.max() - 0.7) < 0.01 and abs(field.min() - 0.1) < 0.01  # the map at an atom is its weight
    items = [{"smiles": "CCO", "x": torch.zeros(3, 1)}, {"smiles": "C", "x": torch.zeros(1, 1)}]
    monkeypatch.setattr(molecules, "pooling_weights", lambda model, items, collate: [w, np.array([1.0])])
    fig = pooling_attention_figure(None, items, None, size=160)
    bars = colour_bars(fig)
    assert len(bars) == 2 and {b.get_ylabel() for b in bars} == {"attention weight"}
    assert "pooling query" in fig.get_suptitle()
    norm = fig.axes[0].images[0].norm
    assert (norm.vmin, norm.vcenter, norm.vmax) == pytest.approx((0.0, 1 / 3, 0.7))  # white: uniform
    plt.close(fig)
