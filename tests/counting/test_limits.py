"""Tests for dpbayes.counting.limits (the Gaussian and lattice limits at large n)."""

import pytest

from dpbayes.counting import metrics as cmet
from dpbayes.counting import limits as cl


def test_gaussian_limit_matches_exact_at_large_n_for_wide_noise():
    g = cl.gaussian_limit(10_000, 0.3, 0.3)
    assert g["ratio"] == pytest.approx(cmet.mean_abs_error("mean", 10_000, 0.3, 0.3) * 0.3, abs=1e-4)
    assert g["closer"] == pytest.approx(cmet.prob_lower_error("mean", 10_000, 0.3, 0.3), abs=1e-3)


def test_lattice_limit_matches_exact_at_large_n_for_narrow_noise():
    lat = cl.lattice_limit(3.0)
    assert lat["ratio"] == pytest.approx(cmet.mean_abs_error("mean", 10_000, 0.3, 3.0) * 3.0, rel=1e-3)
