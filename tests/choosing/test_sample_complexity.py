"""Tests of dpbayes.choosing.sample_complexity: the O(K) UBaPP MSE and the search for the smallest K."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.ubapp.lbapp import clipped_lbapp_mse, lbapp_mse, prior_variance
from dpbayes.choosing.sample_complexity import smallest_K, ubapp_continuous_mse
from dpbayes.ubapp.optimal import ubapp_exact


@pytest.mark.parametrize("K,eps,a,b", [(1, 0.1, 1, 1), (10, 0.001, 1, 1), (100, 1.0, 1, 1), (100, 5.0, 1, 1), (57, 0.03, 2, 5), (300, 0.2, 0.5, 0.5)])
def test_fast_ubapp_matches_exact_solver(K, eps, a, b):
    assert ubapp_continuous_mse(K, eps, a, b) == pytest.approx(ubapp_exact(K, eps, beta_prior=(a, b)).risk, rel=1e-12)


@pytest.mark.parametrize("name", ["ubapp", "lbapp", "clipped"])
@pytest.mark.parametrize("fraction", [0.5, 0.1])
def test_bisection_equals_exhaustive_scan(name, fraction):
    eps = 0.01
    fn = {"ubapp": ubapp_continuous_mse, "lbapp": lbapp_mse, "clipped": clipped_lbapp_mse}[name]
    target = fraction * prior_variance()
    fast = smallest_K(lambda K: fn(K, eps), target, 5000)
    slow = smallest_K(lambda K: fn(K, eps), target, 5000, exhaustive=True)
    assert fast == slow
    assert fn(fast, eps) <= target < fn(fast - 1, eps)


def test_lbapp_smallest_K_closed_form():
    """LBaPP: 1/(6(K+2)) + 2/((K+2) eps)^2 <= target solved for K by the quadratic formula."""
    eps, target = 0.001, 0.5 / 12
    # x = 1/(K+2): (2/eps^2) x^2 + x/6 - target <= 0
    A, B = 2 / eps**2, 1 / 6
    x = (-B + np.sqrt(B * B + 4 * A * target)) / (2 * A)
    assert smallest_K(lambda K: lbapp_mse(K, eps), target, 100000) == int(np.ceil(1 / x - 2))


def test_search_detects_non_monotone_function():
    values = {K: (0.0 if K in (5, 40) else 1.0) for K in range(1, 100)}
    with pytest.raises(RuntimeError, match="non-increasing"):
        smallest_K(lambda K: 0.0 if K >= 40 or K == 30 else 1.0, 0.5, 99)
    assert smallest_K(lambda K: values[K], 0.5, 99, exhaustive=True) == 5
    assert smallest_K(lambda K: 1.0, 0.5, 99) is None
    assert smallest_K(lambda K: 1.0, 0.5, 99, exhaustive=True) is None


def test_bad_input():
    with pytest.raises(ValueError, match="K"):
        ubapp_continuous_mse(0, 1.0)
    with pytest.raises(ValueError, match="eps"):
        ubapp_continuous_mse(3, 0.0)
    with pytest.raises(ValueError, match="target"):
        smallest_K(lambda K: 1.0, -1.0, 10)


@pytest.mark.parametrize("K,eps,a,b", [(1, 0.1, 1, 1), (30, 0.01, 1, 1), (100, 1.0, 1, 1), (57, 3.0, 2, 5)])
def test_fast_laplace_remap_matches_quadrature(K, eps, a, b):
    from dpbayes.ubapp.lbapp import laplace_count_remap_mse
    from dpbayes.choosing.sample_complexity import laplace_remap_mse

    assert laplace_remap_mse(K, eps, a, b) == pytest.approx(laplace_count_remap_mse(K, eps, a, b), rel=1e-9)
