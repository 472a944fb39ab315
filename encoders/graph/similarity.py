"""How close a molecule is to a set of molecules: the Tanimoto similarity of Morgan (ECFP4-like)
fingerprints to its nearest neighbour in the set, the usual applicability-domain check of a
QSAR model (a molecule unlike every training molecule gets a prediction the model has no data
for; Sheridan et al. 2004, J. Chem. Inf. Comput. Sci. 44, 1912).

RDKit's ``rdFingerprintGenerator`` (radius 2, 2048 bits) and ``BulkTanimotoSimilarity``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vecset.encoders.graph.molecules import parse_smiles

RADIUS, BITS = 2, 2048


def _generator():
    from rdkit.Chem import rdFingerprintGenerator

    return rdFingerprintGenerator.GetMorganGenerator(radius=RADIUS, fpSize=BITS)


class NearestNeighbours:
    """The reference molecules' fingerprints, once; ``similarity(smiles)`` is the largest
    Tanimoto similarity of a molecule to any of them (1.0: the same fingerprint).

    Args:
        reference: SMILES of the reference set (a model's training molecules); each must parse.
        fingerprints: their fingerprints as ``binary()`` wrote them, in the same order (a shipped
            predictor's: parsing B3DB's 6,000 training SMILES takes a second or two at each start).
    """

    def __init__(self, reference: Sequence[str], fingerprints: Sequence[bytes] | None = None) -> None:
        gen = _generator()
        if fingerprints is not None:
            from rdkit import DataStructs

            if len(fingerprints) != len(reference):
                raise ValueError(f"NearestNeighbours: {len(fingerprints)} fingerprints for {len(reference)} "
                                 "reference molecules (expected one each)")
            self.fingerprints = [DataStructs.ExplicitBitVect(b) for b in fingerprints]
        else:
            self.fingerprints = [gen.GetFingerprint(parse_smiles(s)) for s in reference]
        if not self.fingerprints:
            raise ValueError("NearestNeighbours needs at least one reference molecule")
        self._gen = gen

    def binary(self) -> list[bytes]:
        """The reference fingerprints in RDKit's binary form (``fingerprints`` reads them back)."""
        return [fp.ToBinary() for fp in self.fingerprints]

    def similarity(self, smiles: str) -> float:
        from rdkit import DataStructs

        fp = self._gen.GetFingerprint(parse_smiles(smiles))
        return float(np.max(DataStructs.BulkTanimotoSimilarity(fp, self.fingerprints)))


__all__ = ["NearestNeighbours"]
