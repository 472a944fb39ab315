"""Export of a molecule property model: RDKit featurization stays in Python (the exported model
takes its tensors), the graph encoder's distance and bond-type bias, degrees, Laplacian
eigenvectors and set-level features are in the graph."""

from __future__ import annotations

import torch

from vecset.backbone import Backbone
from vecset.encoders import GraphEncoder
from vecset.encoders.graph.reading import MoleculeFeaturizer
from vecset.heads import SequenceHead
from vecset.pipelines import TaskModule
from vecset.pipelines.export.program import input_axes

SMILES = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "C", "ClC(Cl)Cl", "CCCCCCCC"]


def molecules(smiles: list[str], featurizer: MoleculeFeaturizer) -> dict:
    items = [{**featurizer(s).graph, "id": i, "features": torch.full((3,), float(i))} for i, s in enumerate(smiles)]
    return featurizer.collate(items)


def test_molecule_regression_export_equals_pytorch(check_exports):
    torch.manual_seed(0)
    f = MoleculeFeaturizer(lap_pe_k=2)
    encoder = GraphEncoder(16, node_dim=f.nodes.dim, heads=2, num_edge_types=f.nodes.num_edge_types, lap_pe_k=2)
    head = SequenceHead(16, 1, task="regression", pooling="attention", extra_features=3,
                        regression_loss="gaussian_nll")
    head.fit_scaler(torch.tensor([[-3.0], [1.0]]))
    model = TaskModule(encoder, Backbone(16, 1, 2, 2.0), head)
    torch.nn.init.normal_(encoder.dist_bias.weight)  # zero at the start: make the bias matter
    example = molecules(SMILES[:3], f)
    served = check_exports(model, example, [molecules(SMILES[3:], f), molecules(SMILES[1:3], f)])
    assert served.inputs == ["x", "mask", "degree", "lap", "dist", "edge", "features"]
    assert served.outputs == ["value", "std"]
    axes = input_axes(served, example)
    assert axes["dist"] == {0: "batch", 1: "set_size", 2: "set_size"} and axes["features"] == {0: "batch"}
