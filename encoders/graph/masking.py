"""Masked atom and bond types, the self-supervised pretext of graph pretraining: some atoms'
features are hidden and their element is the target (Hu et al. 2020, "Strategies for
Pre-training Graph Neural Networks", attribute masking; Rong et al. 2020, GROVER, contextual
properties; the masked tokens of BERT, Devlin et al. 2019).

A masked atom's whole feature row is zeroed, not only its element slots: its mass, degree,
hydrogen count and hybridization would give the element away. With ``hide_bonds`` the bond
types of its bonds are hidden too (set to ``BOND_MASK``, the "other" slot of the encoder's
bond-type table), since a C=O or an aromatic bond also tells the element; shortest-path
distances stay, so the graph is unchanged. Plain torch on a padded batch (``pad_graphs``): no
RDKit here, so a data module may call it.
"""

from __future__ import annotations

import torch
from torch import Tensor

from vecset.encoders.graph.featurize import NodeFeaturizer

IGNORE = -100  # the target of atoms that are not masked, and of padding (cross-entropy's ignore_index)


def element_slots(featurizer: NodeFeaturizer | None = None) -> tuple[int, list[str]]:
    """Where the element one-hot starts in a node row, and the element classes (its vocabulary
    plus ``other``): the targets of masked-atom prediction."""
    featurizer = featurizer or NodeFeaturizer()
    col = 0
    for name, vocab in featurizer.categorical.items():
        if name == "element":
            return col, [*map(str, vocab), "other"]
        col += len(vocab) + 1
    raise ValueError("the node featurizer has no 'element' attribute to mask")


def mask_atoms(batch: dict, rate: float, generator: torch.Generator, featurizer: NodeFeaturizer | None = None,
               hide_bonds: bool = True) -> dict:
    """A copy of ``batch`` with ``rate`` of each molecule's atoms masked (at least one), and
    ``atom_target``: the masked atoms' element class, ``IGNORE`` elsewhere.

    Shapes:
        batch ``x`` (B, N, F), ``mask`` (B, N), ``edge`` (B, N, N) -> the same, plus
        ``atom_target`` (B, N) long.
    """
    if not 0 < rate < 1:
        raise ValueError(f"mask rate must be in (0, 1), got {rate}")
    featurizer = featurizer or NodeFeaturizer()
    start, classes = element_slots(featurizer)
    x, mask = batch["x"], batch["mask"]
    B, N, _ = x.shape
    element = x[..., start : start + len(classes)].argmax(-1)  # (B, N)
    score = torch.rand(B, N, generator=generator).masked_fill(~mask, 2.0)  # padding never chosen
    n_real = mask.sum(1)
    k = (n_real.float() * rate).round().long().clamp(min=1)  # (B,)
    rank = score.argsort(1).argsort(1)  # each atom's place in its molecule's random order
    chosen = (rank < k[:, None]) & mask  # (B, N)
    out = dict(batch)
    out["x"] = x.masked_fill(chosen[..., None], 0.0)
    out["atom_target"] = torch.where(chosen, element, torch.full_like(element, IGNORE))
    if hide_bonds:
        touched = (chosen[:, :, None] | chosen[:, None, :]) & (batch["edge"] > 0)  # (B, N, N)
        out["edge"] = batch["edge"].masked_fill(touched, featurizer.num_edge_types - 1)
    return out


def bond_mask_type(featurizer: NodeFeaturizer | None = None) -> int:
    """The bond type a hidden bond gets (``mask_atoms(hide_bonds=True)``): the table's last, "other"."""
    return (featurizer or NodeFeaturizer()).num_edge_types - 1


BOND_MASK = bond_mask_type()


def masked_fraction(atom_target: Tensor, mask: Tensor) -> float:
    """The share of real atoms masked in a batch (for checks and logs)."""
    return float((atom_target != IGNORE).sum() / mask.sum().clamp(min=1))


__all__ = ["BOND_MASK", "IGNORE", "bond_mask_type", "element_slots", "mask_atoms", "masked_fraction"]
