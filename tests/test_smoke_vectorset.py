import pytest
import torch

from backbone import VectorSet


def test_vectorset_rejects_mask_shape():
    with pytest.raises(ValueError, match=r"mask must be \(B, N\)"):
        VectorSet(x=torch.zeros(2, 3, 4), mask=torch.ones(2, 4, dtype=torch.bool))
