"""Several conformers per molecule in the molecule data module (``conformers: k``,
``pipelines/molecules/conformers.py``): each training draw takes one of a molecule's conformers at
random, seeded (the classic loader and the data on the device), while validation, test and
predict take conformer 0; ``predict_csv`` embeds conformer 0 alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from vecset.pipelines import MoleculeDataModule
from vecset.pipelines.data.options import BucketedPlacement
from vecset.pipelines.molecules.device import MoleculeDeviceLoader
from vecset.pipelines.molecules.options import MoleculeFeatures

K = 3
# 20 flexible chains (alcohols and ethers): their conformers differ
SMILES = [f"{'C' * n}O" for n in range(4, 14)] + [f"{'C' * a}O{'C' * b}" for a in (2, 3, 4) for b in (3, 4, 5)] + \
    ["OCCCCCCO"]


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("confs") / "chains.csv"
    path.write_text("smiles,y\n" + "".join(f"{s},{i}\n" for i, s in enumerate(SMILES)))
    return path


@pytest.fixture(scope="module")
def featurized(csv_path) -> MoleculeDataModule:
    """The chains featurized once with K conformers (the other modules copy its items)."""
    dm = MoleculeDataModule(str(csv_path), target_columns=["y"], batch_size=4, cache=False, features=MoleculeFeatures(geometry=True, conformers=K))
    dm.setup("fit")
    return dm


def module(featurized: MoleculeDataModule, **kw) -> MoleculeDataModule:
    dm = MoleculeDataModule(str(featurized.csv_path), target_columns=["y"], batch_size=4, cache=False, features=MoleculeFeatures(geometry=True, conformers=K), **kw)
    dm.items, dm.splits, dm._keys = featurized.items, featurized.splits, featurized._keys  # featurized once
    return dm


def draws(loader) -> dict[int, torch.Tensor]:
    """Each molecule's dist3d (its real atoms) in one pass over ``loader``."""
    out = {}
    for b in loader:
        for row, i in enumerate(b["ids"].tolist()):
            n = int(b["mask"][row].sum())
            out[i] = b["dist3d"][row, :n, :n]
    return out


def which(item: dict, d: torch.Tensor) -> int:
    """The conformer of ``item`` whose distances ``d`` are (exactly one)."""
    hits = [c for c in range(item["conformers3d"].shape[0]) if torch.equal(item["conformers3d"][c], d)]
    assert len(hits) == 1, hits
    return hits[0]


@pytest.mark.parametrize("on_device", [False, True])
def test_training_draws_a_random_conformer_and_validation_conformer_0(featurized, on_device):
    dm = module(featurized, placement=BucketedPlacement(on_device=on_device))
    by_id = {it["id"]: it for it in dm.items}
    train = dm.train_dataloader()
    assert isinstance(train, MoleculeDeviceLoader) == on_device
    passes = []
    for epoch in range(4):
        torch.manual_seed(epoch)
        if on_device:
            train.sampler.set_epoch(epoch)
        passes.append({i: which(by_id[i], d) for i, d in draws(train).items()})
    assert all(set(p) == {it["id"] for it in dm.splits["train"]} for p in passes)  # every molecule, each epoch
    picks = [c for p in passes for c in p.values()]
    assert set(picks) == set(range(K))  # every conformer gets drawn
    assert passes[0] != passes[1]  # and the draws change from epoch to epoch
    # seeded: the same seed (and epoch) draws the same conformers
    torch.manual_seed(1)
    if on_device:
        train.sampler.set_epoch(1)
    assert {i: which(by_id[i], d) for i, d in draws(train).items()} == passes[1]
    for loader in (dm.val_dataloader(), dm.val_dataloader(), dm.test_dataloader()):
        got = draws(loader)
        assert got and all(torch.equal(d, by_id[i]["dist3d"]) and which(by_id[i], d) == 0 for i, d in got.items())
    assert all(torch.equal(it["conformers3d"][0], it["dist3d"]) for it in dm.items)  # the stored items keep conformer 0


def test_predict_csv_embeds_conformer_0_alone(featurized, tmp_path):
    src = tmp_path / "new.csv"
    src.write_text("smiles\n" + "".join(f"{s}\n" for s in SMILES[:3]))
    dm = module(featurized, predict_csv=str(src))
    dm.setup("predict")
    assert [it["smiles"] for it in dm.predict_items] == SMILES[:3]
    for it, trained in zip(dm.predict_items, dm.items[:3], strict=True):
        assert "conformers3d" not in it and torch.equal(it["dist3d"], trained["conformers3d"][0])


def test_conformers_need_geometry(csv_path):
    with pytest.raises(ValueError, match=r"^features.conformers: 3 needs features.geometry: true"):
        MoleculeDataModule(str(csv_path), target_columns=["y"], features=MoleculeFeatures(conformers=3))
