"""GraphNodeDataModule: node labeling (N -> N) on one networkx graph, semi-supervised.

The default graph is Zachary's karate club (Zachary 1977, "An Information Flow Model for
Conflict and Fission in Small Groups"; ``networkx.karate_club_graph()``): 34 people, labelled
by the club they joined after the split. A few labelled people train; the other nodes are
split into validation and test. Every split sees the whole graph (transductive), only the
nodes whose labels count differ.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import networkx as nx
import numpy as np
import torch
from torch.utils.data import DataLoader

from vecset.contracts.data_spec import DataSpec
from vecset.encoders.graph import NodeFeaturizer, graph_tensors, pad_graphs
from vecset.encoders.graph.structure import GraphStructure
from vecset.pipelines.data.base import ModelLink, VecsetDataModule, fixed
from vecset.pipelines.graphs.predictions import NodeRows

log = logging.getLogger(__name__)


def read_graph(path: Path) -> nx.Graph:
    """A networkx graph from node-link JSON (``.json``) or GraphML (``.graphml``)."""
    if not path.exists():
        raise FileNotFoundError(f"graph file not found: {path}")
    if path.suffix == ".json":
        return nx.node_link_graph(json.loads(path.read_text()), edges="links")
    if path.suffix == ".graphml":
        return nx.read_graphml(path)
    raise ValueError(f"{path}: unsupported graph format {path.suffix!r}; use node-link .json or .graphml")


def node_width(categorical: dict[str, list] | None, numeric: list[str] | None) -> tuple[int, str, str]:
    """The width of a node's features (``NodeFeaturizer.dim``: one-hot per categorical attribute
    with an "other" slot, one column per numeric one; a constant 1 with none)."""
    dim = NodeFeaturizer(categorical or {}, numeric or []).dim
    return dim, "categorical", f"{categorical} with numeric {numeric} ({dim} features)"


class GraphNodeDataModule(VecsetDataModule):
    """Node classification on one graph.

    Args:
        graph_path: node-link JSON or GraphML file; None uses ``networkx.karate_club_graph()``.
        label_attribute: node attribute holding the class.
        categorical: node attribute -> vocabulary (one-hot); numeric: attributes used as is.
            Both empty: every node gets the constant 1 and structure does the work.
        edge_attribute: edge attribute for the edge-type bias (None: all edges one type).
        train_nodes: the labelled training nodes; None draws ``train_per_class`` per class.
        train_per_class: labelled nodes per class when ``train_nodes`` is None.
        seed: draws the training nodes and the val/test halves of the rest.
        max_dist, lap_pe_k: structure tensors (the encoder checks at setup that its tables fit them).

    Batches: one graph, ``y`` (1, N) long with -100 on nodes outside the split.
    """

    def __init__(self, graph_path: str | None = None, label_attribute: str = "club",
                 categorical: dict[str, list] | None = None, numeric: list[str] | None = None,
                 edge_attribute: str | None = None, train_nodes: list | None = None, train_per_class: int = 2,
                 seed: int = 0, max_dist: int = 8, lap_pe_k: int = 4) -> None:
        super().__init__()
        self.graph_path = Path(graph_path) if graph_path else None
        self.label_attribute = label_attribute
        self.featurizer = NodeFeaturizer(categorical or {}, numeric or [], edge_attribute, [])
        self.train_nodes, self.train_per_class, self.seed = train_nodes, train_per_class, seed
        self.max_dist, self.lap_pe_k = max_dist, lap_pe_k
        self.graph: nx.Graph | None = None
        self.class_names: list[str] | None = None
        self.split_nodes: dict[str, list] = {}

    def setup(self, stage: str | None = None) -> None:
        if self.graph is not None:
            return
        g = read_graph(self.graph_path) if self.graph_path else nx.karate_club_graph()
        nodes = list(g.nodes)
        where = self.graph_path or "karate_club_graph()"
        missing = [n for n in nodes if self.label_attribute not in g.nodes[n]]
        if missing:
            raise ValueError(f"{where}: {len(missing)} nodes have no {self.label_attribute!r} attribute, "
                             f"e.g. node {missing[0]!r}")
        labels = [g.nodes[n][self.label_attribute] for n in nodes]
        self.class_names = sorted({str(v) for v in labels})
        y = np.array([self.class_names.index(str(v)) for v in labels])
        rng = np.random.default_rng(self.seed)
        if self.train_nodes is None:
            train = [i for c in range(len(self.class_names))
                     for i in rng.choice(np.flatnonzero(y == c), self.train_per_class, replace=False)]
        else:
            unknown = [n for n in self.train_nodes if n not in g]
            if unknown:
                raise ValueError(f"{where}: train_nodes {unknown} are not nodes of the graph")
            train = [nodes.index(n) for n in self.train_nodes]
        rest = rng.permutation([i for i in range(len(nodes)) if i not in set(train)])
        half = len(rest) // 2
        idx = {"train": sorted(int(i) for i in train), "val": sorted(int(i) for i in rest[:half]),
               "test": sorted(int(i) for i in rest[half:])}
        base = graph_tensors(g, self.featurizer, self.max_dist, self.lap_pe_k)
        self.items = {}
        for split, chosen in idx.items():
            target = torch.full((len(nodes),), -100, dtype=torch.long)
            target[chosen] = torch.as_tensor(y[chosen])
            self.items[split] = {**base, "y": target, "id": 0}
        self.items["predict"] = {**base, "y": torch.as_tensor(y), "id": 0}
        self.graph, self.nodes = g, nodes
        self.split_nodes = {k: [nodes[i] for i in v] for k, v in idx.items()}
        log.info("%s: %d nodes, %d edges, classes %s, nodes per split %s", where, len(nodes), g.number_of_edges(),
                 self.class_names, {k: len(v) for k, v in idx.items()})

    def _loader(self, split: str, shuffle: bool = False) -> DataLoader:  # one graph: nothing to shuffle
        return DataLoader([self.items[split]], batch_size=1,
                          collate_fn=lambda items: pad_graphs(items, unreachable=self.max_dist + 1))

    def predict_split(self) -> str:
        return "predict"

    def data_spec(self, stage: str) -> DataSpec:
        """The class names and how the graph's tensors were made (checked against the encoder's tables)."""
        graph = GraphStructure(max_dist=self.max_dist, lap_pe_k=self.lap_pe_k, node_dim=self.featurizer.dim,
                               num_edge_types=self.featurizer.num_edge_types)
        return replace(super().data_spec(stage), structure=graph)

    def test_items(self) -> list[dict]:
        """The one graph, with the test nodes' labels (the others' -100)."""
        return [self.items["test"]]

    def attention_example(self) -> tuple[dict, list[str], str, str]:
        """The graph as a batch, each node's name and class (for ``VectorAttentionReport``)."""
        y = self.items["predict"]["y"].tolist()
        labels = [f"{n} {self.class_names[c]}" for n, c in zip(self.nodes, y, strict=True)]
        return next(iter(self._loader("test"))), labels, "node", self.describe(0)

    def describe(self, sample_id: int) -> str:
        """The one graph every batch holds (sample id 0): its file."""
        where = self.graph_path or "networkx.karate_club_graph()"
        return f"{where} ({len(self.nodes)} nodes)"

    # -- what the generic layers ask the job --------------------------------------------------
    @classmethod
    def model_links(cls) -> list[ModelLink]:
        """The graph's distance clipping, eigenvector count, node feature width and edge types
        (none or edge: no edge vocabulary here) are the graph encoder's: given once, at the data."""
        edge_types = NodeFeaturizer({}, [], None, []).num_edge_types
        return [*(ModelLink(f"graph {name}", (name,), "encoder", name, lambda v, name=name: (v, name, str(v)))
                  for name in ("max_dist", "lap_pe_k")),
                ModelLink("node feature width", ("categorical", "numeric"), "encoder", "node_dim", node_width),
                fixed("edge type count", "encoder", "num_edge_types", edge_types, f"{edge_types} edge types")]

    def prediction_output(self, out_dir: Path, model) -> NodeRows:
        """One row per node of the graph: its predicted class, probability and split."""
        return NodeRows(self, out_dir)

    def default_reports(self) -> list:
        """The per-class report, one block's attention between the nodes."""
        from vecset.pipelines.reports.defaults import scored  # matplotlib: when asked
        from vecset.pipelines.reports.vector_attention import VectorAttentionReport

        return [*scored(self), VectorAttentionReport()]
