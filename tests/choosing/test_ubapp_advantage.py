"""Tests of dpbayes.choosing.ubapp_advantage: UBaPP's advantage over LBaPP and over Laplace count + posterior mean."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.ubapp.optimal import ubapp_exact
from dpbayes.choosing.ubapp_advantage import eps_advantage_below, largest_advantage, relative_advantage


def test_advantage_threshold_is_a_crossing():
    K, level = 10, 0.01
    e_star = eps_advantage_below(K, level, n_scan=21)
    assert np.isclose(relative_advantage(K, e_star), level, rtol=1e-6)
    assert relative_advantage(K, 0.5 * e_star) > level
    assert relative_advantage(K, 2.0 * e_star) < level
    assert 0 < relative_advantage(K, 1.0) < 1
    with pytest.raises(ValueError, match="eps_range"):
        eps_advantage_below(K, level, eps_range=(1.0, 0.1))


def test_advantage_over_the_fair_baseline():
    from dpbayes.ubapp.lbapp import laplace_count_remap_mse

    K, eps = 20, 1.5
    fair = laplace_count_remap_mse(K, eps)
    assert relative_advantage(K, eps, baseline="laplace-remap") == pytest.approx((fair - ubapp_exact(K, eps).risk) / fair, rel=1e-8)
    # never negative (UBaPP is the optimum) and below the advantage over LBaPP
    assert 0 < relative_advantage(K, eps, baseline="laplace-remap") < relative_advantage(K, eps)
    e_star, adv = largest_advantage(K, n_scan=15)
    for e in (e_star * 0.9, e_star * 1.1, 0.01, 15.0):
        assert relative_advantage(K, e, baseline="laplace-remap") <= adv + 1e-12
    with pytest.raises(ValueError, match="baseline"):
        relative_advantage(K, eps, baseline="clipped")
