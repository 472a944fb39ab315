"""encoders/graph/physics.py (issue #58 item 3): the generalized-Born energy against the Born
equation and a hand computation, HCT Born radii, and the molecule's physics descriptors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rdkit import Chem

from vecset.encoders.graph.physics import (
    COULOMB,
    PHYSICS_NAMES,
    born_radii,
    gb_energy,
    gb_polarization,
    physics_descriptors,
)

PREFACTOR = -0.5 * COULOMB * (1 - 1 / 78.5)  # -163.917 kcal A / (mol e^2)


def test_one_ion_is_the_born_equation():
    # dG = -k/2 (1 - 1/eps) q^2 / R: a unit charge of radius 2 A loses 81.96 kcal/mol
    assert gb_energy(np.array([1.0]), np.zeros((1, 3)), np.array([2.0])) == pytest.approx(-81.958, abs=1e-3)


def test_an_isolated_atom_keeps_its_radius_less_the_offset():
    # atoms 20 A apart hardly descreen each other (HCT's descreening falls as r^-4): R = r_vdw - 0.09
    radii = born_radii(np.array([[0.0, 0, 0], [20.0, 0, 0]]), np.array([1.7, 1.2]))
    assert radii == pytest.approx([1.61, 1.11], abs=1e-5) and (radii > [1.61, 1.11]).all()


def test_a_pair_by_hand():
    # two atoms of van der Waals radius 1.5 A, 2 A apart, charges +-0.5. By hand:
    # rho = 1.41, s rho = 1.128; L = max(1.41, |2 - 1.128|) = 1.41, U = 3.128; l = 1/L = 0.709220,
    # u = 1/U = 0.319693; H = l - u + r/4 (u^2 - l^2) + ln(u/l) / (2r) + (s rho)^2 / (4r) (l^2 - u^2)
    #   = 0.389527 - 0.200394 - 0.199202 + 0.063745 = 0.053676; 1/R = 1/1.41 - H/2 = 0.682382, R = 1.46545
    # f_12 = sqrt(4 + R^2 exp(-4 / (4 R^2))) = sqrt(4 + 2.147555 * 0.627723) = 2.312590
    # sum q q / f = 2 * 0.25 / R - 2 * 0.25 / f = 0.341194 - 0.216209 = 0.124985; dG = -163.917 * 0.124985
    coords = np.array([[0.0, 0, 0], [2.0, 0, 0]])
    radii = born_radii(coords, np.array([1.5, 1.5]))
    assert radii == pytest.approx([1.46545, 1.46545], abs=1e-5)
    assert gb_energy(np.array([0.5, -0.5]), coords, radii) == pytest.approx(PREFACTOR * 0.124985, abs=2e-3)
    assert PREFACTOR * 0.124985 == pytest.approx(-20.487, abs=1e-3)


def test_a_buried_atom_gets_a_larger_born_radius_and_the_vectorized_sum_equals_a_loop():
    # a carbon inside a tight shell of six hydrogens: descreened, its Born radius grows past 1.61
    shell = 1.1 * np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=float)
    coords = np.vstack([np.zeros(3), shell])
    vdw = np.array([1.7] + [1.2] * 6)
    radii = born_radii(coords, vdw)
    assert radii[0] > 1.61 and np.allclose(radii[1:], radii[1])
    q = np.array([-0.6] + [0.1] * 6)
    loop = sum(q[i] * q[j] / math.sqrt(((coords[i] - coords[j]) ** 2).sum()
                                      + radii[i] * radii[j] * math.exp(-((coords[i] - coords[j]) ** 2).sum()
                                                                        / (4 * radii[i] * radii[j])))
               for i in range(7) for j in range(7))
    assert gb_energy(q, coords, radii) == pytest.approx(PREFACTOR * loop)


def test_the_descriptors_of_small_molecules():
    acetic, octane = (physics_descriptors(Chem.MolFromSmiles(s)) for s in ("CC(=O)O", "CCCCCCCC"))
    assert acetic.shape == (len(PHYSICS_NAMES),) == (7,)
    named = dict(zip(PHYSICS_NAMES, acetic, strict=True))
    assert named["tpsa"] == pytest.approx(37.3) and (named["hbd"], named["hba"]) == (1, 1)
    assert named["gb_polarization"] < 0  # polarization always lowers the energy
    # a polar molecule is polarized more than an alkane; the alkane is larger and more lipophilic
    assert acetic[0] < octane[0] < 0 and octane[1] > acetic[1] > 0 and octane[2] > acetic[2]
    assert octane[6] == 5  # rotatable bonds


def test_a_charged_molecule_is_polarized_far_more_and_no_conformer_gives_nan(monkeypatch):
    import vecset.encoders.graph.geometry as geometry

    tma = Chem.MolFromSmiles("C[N+](C)(C)C")
    molh, _ = geometry.embed(tma)
    assert gb_polarization(molh) < -30  # a whole elementary charge: Born-like tens of kcal/mol
    assert physics_descriptors(tma)[0] == pytest.approx(gb_polarization(molh))  # embed is seeded: the same conformer
    monkeypatch.setattr(geometry, "embed", lambda mol: (None, geometry.FAILED))  # a molecule RDKit cannot embed
    out = physics_descriptors(tma)
    assert np.isnan(out[:2]).all() and np.isfinite(out[2:]).all()
