"""Molecule graphs resident on the training device: padded batches gathered there.

The featurized molecules of a split (FreeSolv's 642: about 1 MB) are packed once into padded
tensors, one row per molecule, as wide as the split's largest molecule (or its length bucket),
and kept on the training device with each molecule's atom count on the host. A batch is one
gather of those rows by an index tensor, cut to the batch's largest molecule (or its bucket):
no per-item collate, no host-to-device copy. The batches equal ``pad_graphs``' (the classic
collate) for the same molecules, tensor by tensor. The order is drawn on the host
(``data/gathered.py``: seeded, every molecule once an epoch, exact mid-epoch resume).

Pairwise tensors (distances, bond types) are stored in the smallest integer type that holds
their values (uint8 for max_dist < 254) and widened to ``pad_graphs``' long on the gather: a
B3DB split padded to 100 atoms then takes 10 KB a molecule per pairwise tensor, not 80 KB.

A training split featurized with several conformers (``conformers`` > 1) is packed with all of
them, ``conformers3d`` (n, C, W, W), instead of ``dist3d``; its loader draws one per molecule and
batch (``conformers.pick_conformers``). The other splits hold conformer 0 (``dist3d``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from pytorch_lightning.utilities import rank_zero_info
from torch import Tensor

from vecset.encoders.collate import PADDED
from vecset.pipelines.data.device_loader import (
    check_finite,
    fmt_bytes,
    resident_bytes,
    share_that_fits,
)
from vecset.pipelines.data.gathered import GatherLoader, Placement, gather_loader
from vecset.pipelines.molecules.conformers import pick_conformers

NO_DISTANCE = -1.0  # pad_graphs' 3-D distance padding (geometry.NO_DISTANCE)


def smallest_int(max_value: int) -> torch.dtype:
    """The smallest integer dtype holding 0..max_value."""
    for dtype in (torch.uint8, torch.int16, torch.int32):
        if max_value <= torch.iinfo(dtype).max:
            return dtype
    return torch.long


@dataclass
class ResidentGraphs:
    """One split's molecules, padded to one width W.

    Shapes:
        x (n, W, F) float; dist, edge (n, W, W) small ints (padding: ``unreachable``, 0); degree
        (n, W) small int; lap (n, W, k) float; dist3d (n, W, W) float (padding -1); features
        (n, Fd) float; y (n, T) float or (n,) long; ids (n,) long; all on one device. Packed with
        conformers: conformers3d (n, C, W, W) float (C the most of any molecule, padding -1) and
        conformer_count (n,) long, in place of dist3d.
        host_lengths: the n atom counts as Python ints (what the host reads to size a batch).
    """

    tensors: dict[str, Tensor]
    host_lengths: list[int]
    unreachable: int

    # the pairwise (dims 1 and 2) and per-atom (dim 1) tensors, cut to a batch's width on the gather
    PAIRS = ("dist", "edge", "dist3d")
    STACKS = ("conformers3d",)  # pairwise, one matrix per conformer (dims 2 and 3)
    ATOMS = ("x", "degree", "lap")
    LONG = ("dist", "edge", "degree")  # stored small, gathered as pad_graphs' long

    @classmethod
    def pack(cls, items: Sequence[dict], unreachable: int, width: int | None = None,
             conformers: bool = False) -> ResidentGraphs:
        """Featurized items (``pad_graphs``' input) packed on the CPU, ``width`` wide (at least the
        largest molecule; default: the largest); ``conformers``: their ``conformers3d`` in place
        of ``dist3d`` (a training split's, for ``pick_conformers``)."""
        if not items:
            raise ValueError("cannot pack an empty split")
        lengths = [int(it["x"].shape[0]) for it in items]
        W = max(lengths) if width is None else width
        if W < max(lengths):
            raise ValueError(f"width {W} is smaller than the largest molecule ({max(lengths)} atoms)")
        n, first = len(items), items[0]
        F = first["x"].shape[1]
        edge_max = max(int(it["edge"].max()) for it in items)
        degree_max = max(int(it["degree"].max()) for it in items)
        t = {"x": torch.zeros(n, W, F),
             "dist": torch.full((n, W, W), unreachable, dtype=smallest_int(unreachable)),
             "edge": torch.zeros(n, W, W, dtype=smallest_int(edge_max)),
             "degree": torch.zeros(n, W, dtype=smallest_int(degree_max)),
             "ids": torch.tensor([int(it["id"]) for it in items], dtype=torch.long)}
        if "lap" in first:
            t["lap"] = torch.zeros(n, W, first["lap"].shape[1])
        if conformers:
            counts = [int(it["conformers3d"].shape[0]) for it in items]
            t["conformers3d"] = torch.full((n, max(counts), W, W), NO_DISTANCE)
            t["conformer_count"] = torch.tensor(counts, dtype=torch.long)
        elif "dist3d" in first:
            t["dist3d"] = torch.full((n, W, W), NO_DISTANCE)
        for i, (it, k) in enumerate(zip(items, lengths, strict=True)):
            t["x"][i, :k] = it["x"]
            t["dist"][i, :k, :k] = it["dist"]
            t["edge"][i, :k, :k] = it["edge"]
            t["degree"][i, :k] = it["degree"]
            if "lap" in t:
                t["lap"][i, :k] = it["lap"]
            if "dist3d" in t:
                t["dist3d"][i, :k, :k] = it["dist3d"]
            if conformers:
                c = it["conformers3d"]
                t["conformers3d"][i, : c.shape[0], :k, :k] = c
        if "y" in first:
            ys = [torch.as_tensor(it["y"]) for it in items]
            if ys[0].dtype == torch.long and ys[0].dim() > 0:
                raise ValueError("molecules on the device hold one target per molecule, not one label per atom")
            t["y"] = torch.stack(ys) if ys[0].dtype == torch.long else torch.stack(ys).float()
        if "features" in first:
            t["features"] = torch.stack([torch.as_tensor(it["features"]) for it in items]).float()
        if "physics" in first:  # one vector per molecule, as features
            t["physics"] = torch.stack([it["physics"] for it in items]).float()
        return cls(t, lengths, unreachable)

    @property
    def device(self) -> torch.device:
        return self.tensors["ids"].device

    @property
    def width(self) -> int:
        return self.tensors["x"].shape[1]

    def nbytes(self) -> int:
        return resident_bytes(self.tensors)

    def to(self, device: torch.device) -> ResidentGraphs:
        return ResidentGraphs({k: v.to(device) for k, v in self.tensors.items()}, self.host_lengths, self.unreachable)

    def __len__(self) -> int:
        return len(self.host_lengths)

    def gather(self, rows: list[int], width: int | None = None) -> dict:
        """The batch of molecules ``rows`` (host ints), cut to the largest (``pad_graphs``' batch)
        or to ``width`` (a length bucket, at least the largest, at most the stored width).

        Shapes: x (B, N, F), mask (B, N) bool, dist/edge (B, N, N) long, degree (B, N) long,
        ids (B,), y, features; N = width or the largest molecule of ``rows``."""
        lens = [self.host_lengths[r] for r in rows]
        N = max(lens) if width is None else width  # Python ints: no tensor read
        if N > self.width:
            raise ValueError(f"a batch width of {N} atoms is more than the {self.width} the split was packed to")
        device = self.device
        b = torch.tensor(rows, dtype=torch.long).to(device, non_blocking=True)
        batch: dict = {}
        for key, t in self.tensors.items():
            if key in self.PAIRS:
                v = t[:, :N, :N][b]  # slice first (a view), then gather B rows: B x N x N copied
            elif key in self.STACKS:
                v = t[:, :, :N, :N][b]
            elif key in self.ATOMS:
                v = t[:, :N][b]
            else:
                v = t[b]
            batch[key] = v.long() if key in self.LONG else v
        length = torch.tensor(lens, dtype=torch.long).to(device, non_blocking=True)
        batch["mask"] = torch.arange(N, device=device)[None, :] < length[:, None]  # (B, N)
        batch[PADDED] = min(lens) < N
        return batch


class MoleculeDeviceLoader(GatherLoader):
    """Batches of resident molecules (``GatherLoader``): the order on the host, each batch cut to
    its largest molecule or its length bucket."""


class MoleculePlacement(Placement):
    """Where a molecule data module's splits live (``Placement``); ``loader`` gives a
    ``MoleculeDeviceLoader`` there, or None for the classic DataLoader."""

    def loader(self, dm, split: str, shuffle: bool, device: torch.device) -> MoleculeDeviceLoader | None:
        """``dm``: the MoleculeDataModule (after ``setup``)."""
        graphs = self.placed(dm, split, device)
        if graphs is None:
            return None
        draw = (pick_conformers,) if "conformers3d" in graphs.tensors else ()  # training with conformers
        return gather_loader(MoleculeDeviceLoader, graphs, dm.batch_size, train=split == "train", shuffle=shuffle,
                             transforms=draw, buckets=self.buckets,
                             within_buckets=self.within_buckets and split == "train")

    def pack(self, dm, split: str) -> ResidentGraphs:
        """A split packed on the CPU, checked for NaN/inf (naming the molecule's file, line and
        SMILES): device batches skip the per-batch host checks."""
        items = dm.splits[split]
        width = self.buckets.length(max(int(it["x"].shape[0]) for it in items))
        several = split == "train" and dm.featurizer.conformers > 1  # a random conformer per draw
        graphs = ResidentGraphs.pack(items, dm.featurizer.max_dist + 1, width, conformers=several)
        check_finite(split, graphs.tensors, dm.describe)
        return graphs

    def _place(self, dm, device: torch.device) -> dict[str, ResidentGraphs] | None:
        name = type(dm).__name__
        if self.on_device is False:
            return None
        splits = [s for s in ("train", "val", "test") if dm.splits.get(s)]
        graphs = {s: self.pack(dm, s) for s in splits}
        size = sum(g.nbytes() for g in graphs.values())
        share = share_that_fits(name, "the graphs take", "they stay", size, device, self.device_memory_share,
                                self.on_device)
        if share is None:
            return None
        widths = ", ".join(f"{s} {len(g)} x {g.width} atoms" for s, g in graphs.items())
        note = self.bucket_note([n for g in graphs.values() for n in g.host_lengths])
        rank_zero_info(f"{name}: graphs on {device}: {fmt_bytes(size)} = {share} ({widths}; at most "
                       f"{100 * self.device_memory_share:.0f}%, on_device: {self.on_device}); batches gathered "
                       f"there{note}")
        return {s: g.to(device) for s, g in graphs.items()}
