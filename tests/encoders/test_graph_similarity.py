"""encoders/graph/similarity.py: nearest-neighbour Tanimoto similarity to a reference set."""

import pytest

from vecset.encoders.graph.molecules import InvalidMolecule
from vecset.encoders.graph.similarity import NearestNeighbours


def test_nearest_neighbour_similarity():
    nn = NearestNeighbours(["CCO", "c1ccccc1O", "CCCCCC"])
    assert nn.similarity("OCC") == 1.0  # the same molecule written another way
    near, far = nn.similarity("Cc1ccccc1O"), nn.similarity("[Fe+2].[Fe+2]")
    assert 0.3 < near < 1.0  # cresol is close to phenol
    assert far == 0.0  # no fingerprint bit shared
    with pytest.raises(InvalidMolecule, match="empty SMILES"):
        nn.similarity("")
    with pytest.raises(ValueError, match="at least one reference molecule"):
        NearestNeighbours([])


def test_fingerprints_read_back_give_the_same_similarities():
    """A shipped predictor packs the training fingerprints (``binary``) instead of parsing its
    training SMILES at every start: the similarities are the same."""
    ref = ["CCO", "c1ccccc1O", "CC(=O)N"]
    nn = NearestNeighbours(ref)
    again = NearestNeighbours(ref, nn.binary())
    for smiles in ("OCC", "Cc1ccccc1O", "[Fe+2].[Fe+2]", "CCN"):
        assert again.similarity(smiles) == nn.similarity(smiles)
    with pytest.raises(ValueError, match="^NearestNeighbours: 2 fingerprints for 3 reference molecules"):
        NearestNeighbours(ref, nn.binary()[:2])
