"""PretextHead: the self-supervised targets of molecule pretraining, read from the backbone's
atoms: the element of each masked atom (cross-entropy; attribute masking, Hu et al. 2020,
"Strategies for Pre-training Graph Neural Networks") and the molecule's standardized RDKit 2-D
descriptors (regression from the pooled atoms; as in GROVER's graph-level motif targets, Rong
et al. 2020, and the descriptor pretraining of Fabian et al. 2020, "Molecular representation
learning with language models and domain-relevant auxiliary tasks").

The targets come in the batch (``atom_target``, ``desc_target``: ``encoders/graph/masking.py``
and the pretraining data module), never as inputs: the descriptors are not ``features``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import Metric, MetricCollection

from vecset.contracts.data_spec import DataSpec
from vecset.contracts.vectorset import VectorSet
from vecset.heads.contract import Head, check_class_count

IGNORE = -100


class MaskedAtomAccuracy(Metric):
    """Share of masked atoms whose element is predicted right (``atom_target`` != -100)."""

    higher_is_better = True

    def __init__(self) -> None:
        super().__init__()
        self.add_state("right", torch.tensor(0.0), dist_reduce_fx="sum")
        self.add_state("total", torch.tensor(0.0), dist_reduce_fx="sum")

    def update(self, out: dict, batch: dict) -> None:
        target = batch["atom_target"]
        keep = target != IGNORE
        self.right += (out["atom_logits"].argmax(-1)[keep] == target[keep]).sum()
        self.total += keep.sum()

    def compute(self) -> Tensor:
        return self.right / self.total.clamp(min=1)


class DescriptorRMSE(Metric):
    """RMSE of the standardized descriptors, over every molecule and descriptor (z units:
    predicting the training mean scores about 1)."""

    higher_is_better = False

    def __init__(self) -> None:
        super().__init__()
        self.add_state("sq", torch.tensor(0.0), dist_reduce_fx="sum")
        self.add_state("n", torch.tensor(0.0), dist_reduce_fx="sum")

    def update(self, out: dict, batch: dict) -> None:
        self.sq += ((out["desc"].float() - batch["desc_target"].float()) ** 2).sum()
        self.n += batch["desc_target"].numel()

    def compute(self) -> Tensor:
        return (self.sq / self.n.clamp(min=1)).sqrt()


class PretextHead(Head):
    """Masked-atom element classification per atom plus descriptor regression per molecule.

    Args:
        d_model: input width D.
        num_atom_types: element classes A (``encoders.graph.masking.element_slots``: 13, the
            element vocabulary plus "other"); checked against the data's at setup.
        num_descriptors: standardized descriptors F_d (217 with RDKit 2026.09); checked at setup.
        desc_weight: weight of the descriptor MSE in the loss (the atom cross-entropy has 1);
            0 trains the masked atoms alone.
        atom_weight: weight of the masked-atom cross-entropy; 0 trains the descriptors alone.
        dropout: before each hidden layer.

    Shapes:
        VectorSet (B, N, D) -> ``atom_logits`` (B, N, A), ``desc`` (B, F_d); targets
        ``batch["atom_target"]`` (B, N) long (-100: not masked), ``batch["desc_target"]`` (B, F_d).
    """

    monitor = ("val_loss", "min")

    def __init__(self, d_model: int, num_atom_types: int = 13, num_descriptors: int = 217,
                 desc_weight: float = 1.0, atom_weight: float = 1.0, dropout: float = 0.0) -> None:
        super().__init__()
        if desc_weight < 0 or atom_weight < 0 or desc_weight + atom_weight == 0:
            raise ValueError(f"PretextHead needs weights >= 0, not both 0 (got atom_weight={atom_weight}, "
                             f"desc_weight={desc_weight})")
        self.in_width = d_model
        self.num_atom_types, self.num_descriptors = num_atom_types, num_descriptors
        self.desc_weight, self.atom_weight = desc_weight, atom_weight
        self.atom = nn.Sequential(nn.LayerNorm(d_model), nn.Dropout(dropout), nn.Linear(d_model, d_model),
                                  nn.GELU(), nn.Linear(d_model, num_atom_types))
        self.desc = nn.Sequential(nn.LayerNorm(d_model), nn.Dropout(dropout), nn.Linear(d_model, 2 * d_model),
                                  nn.GELU(), nn.Linear(2 * d_model, num_descriptors))

    def forward(self, vs: VectorSet, features: Tensor | None = None, batch: dict | None = None) -> dict:
        x, mask = (vs.x[:, 1:], vs.mask[:, 1:]) if vs.cls else (vs.x, vs.mask)
        m = mask[..., None].to(x.dtype)
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1)  # (B, D)
        return {"atom_logits": self.atom(x), "desc": self.desc(pooled)}

    def loss(self, out: dict, batch: dict) -> Tensor:
        logits = out["atom_logits"].float()
        atom = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["atom_target"].reshape(-1),
                               ignore_index=IGNORE)
        desc = F.mse_loss(out["desc"].float(), batch["desc_target"].float())
        return self.atom_weight * atom + self.desc_weight * desc

    def metrics(self) -> MetricCollection:
        return MetricCollection({"atom_acc": MaskedAtomAccuracy(), "desc_rmse": DescriptorRMSE()})

    def metric_inputs(self, out: dict, batch: dict) -> tuple:
        return out, batch

    def predict(self, out: dict, batch: dict) -> dict:
        return {"descriptors": out["desc"].float().tolist()}

    def receive(self, spec: DataSpec) -> str | None:
        """The data's element classes (``class_names``) and descriptor count (the width of
        ``train_targets`` at fit) against this head's."""
        check_class_count(self.num_atom_types, spec)
        if spec.train_targets is not None and spec.train_targets.shape[-1] != self.num_descriptors:
            raise ValueError(f"{spec.where}PretextHead(num_descriptors={self.num_descriptors}) but {spec.source} "
                             f"gives {spec.train_targets.shape[-1]} descriptors per molecule; set num_descriptors")
        return None
