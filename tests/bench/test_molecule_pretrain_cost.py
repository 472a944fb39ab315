"""bench/molecule_pretrain_cost.py (issue #58): the sample is make_moses_csv's draw order, and the
sizing turns measured rates into CPU hours and cache bytes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import molecule_pretrain_cost as mc  # noqa: E402


def test_the_sample_is_the_first_of_the_seeded_permutation():
    smiles = [f"C{i}" for i in range(10)]
    order = np.random.default_rng(0).permutation(10)
    assert mc.sample(smiles, 3) == [smiles[i] for i in order[:3]]


def test_sizing_from_the_rates():
    res = {"featurize": {"per_cpu_second": 100.0, "cache_bytes_per_molecule": 15_000},
           "train": {"per_cpu_second": 500.0}, "memory": {"rss_bytes_per_molecule": 70_000}}
    s = mc.sizing(res)
    assert s["500k"] == {"molecules": 500_000, "featurize_cpu_hours": pytest.approx(1.39, abs=0.01),
                         "epoch_cpu_hours": pytest.approx(0.28, abs=0.01), "cache_gb": 7.5,
                         "memory_gb": 35.0}
    assert s["all"]["featurize_cpu_hours"] == pytest.approx(1_584_663 / 100 / 3600, abs=0.01)
