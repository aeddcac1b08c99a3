"""Tests of dpbayes.ubapp.scope: the reduction to the count, the neighbour relation, the grid and other targets."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.ubapp.optimal import (
    truncated_geometric_logmatrix,
    binomial_likelihood,
    ubapp_exact,
)
from dpbayes.ubapp.scope import (
    add_remove_privacy_loss,
    add_remove_release_mse,
    binary_data_likelihood,
    grid_deficit,
    hamming_neighbours,
    largest_scope_gap,
    neighbour_tv,
    target_scope_gap,
    ubapp_full_data_lp,
)


def test_hamming_neighbours_and_binary_likelihood():

    nb = hamming_neighbours(3)
    assert nb.shape == (3 * 2**3 // 2, 2)
    assert all(bin(int(i) ^ int(j)).count("1") == 1 for i, j in nb)
    g = np.linspace(0.0, 1.0, 7)
    Q = binary_data_likelihood(3, g)
    np.testing.assert_allclose(Q.sum(axis=0), 1.0, rtol=1e-12)
    # grouping the data sets by their count gives the binomial likelihood
    s = np.array([bin(i).count("1") for i in range(8)])
    np.testing.assert_allclose(np.array([Q[s == y].sum(axis=0) for y in range(4)]), binomial_likelihood(3, g), rtol=1e-12)
    with pytest.raises(ValueError, match="K"):
        hamming_neighbours(11)


@pytest.mark.parametrize("K,eps", [(3, 0.1), (3, 5.0), (4, 1.0)])
def test_full_data_lp_equals_count_lp(K, eps):
    """Paper eq. (8): optimising over estimators of x gains nothing over estimators of the count."""

    g = np.linspace(0.0, 1.0, 15)
    full = ubapp_full_data_lp(K, eps, g)
    assert full.risk == pytest.approx(ubapp_exact(K, eps, g).risk, rel=1e-9)
    assert full.privacy_loss <= eps * (1 + 1e-9)


def test_neighbour_tv_reaches_the_dp_bound():

    sol = ubapp_exact(30, 2.0, np.linspace(0.0, 1.0, 301))
    tv = neighbour_tv(sol.P)
    assert tv.shape == (30,)
    assert np.all(tv <= np.tanh(1.0) * (1 + 1e-12))
    assert tv.max() == pytest.approx(np.tanh(1.0), rel=1e-9)
    with pytest.raises(ValueError, match="P"):
        neighbour_tv(np.ones(3))


def test_add_remove_privacy_loss():

    # continuous limit: E[theta | z] under K and K + 1 never coincide, so some output is impossible for a neighbour
    assert add_remove_privacy_loss(10, 1.0) == np.inf
    # a grid of three points, all used by both sizes: finite, and at least eps (the replace-one part)
    loss = add_remove_privacy_loss(4, 0.5, np.linspace(0.0, 1.0, 3))
    assert np.isfinite(loss) and loss >= 0.5 - 1e-12


def test_grid_deficit():
    from dpbayes.ubapp.lbapp import lbapp_mse

    g = np.linspace(0.0, 1.0, 11)
    assert grid_deficit(20, 2.0, 11) == pytest.approx(ubapp_exact(20, 2.0, g).risk - lbapp_mse(20, 2.0), rel=1e-12)
    # fine grids tend to the continuous limit, which is below LBaPP
    assert grid_deficit(20, 2.0, 4001) == pytest.approx(ubapp_exact(20, 2.0).risk - lbapp_mse(20, 2.0), abs=1e-5)
    assert grid_deficit(20, 2.0, 4001) < 0
    with pytest.raises(ValueError, match="M"):
        grid_deficit(20, 2.0, 1)


def test_target_scope_gap():
    """Geometric + remap is the LP optimum for monotone targets, not for theta(1 - theta) (issue 36)."""

    gap, mono = target_scope_gap("theta^2", 6, 1.0, M=21)
    assert mono and abs(gap) < 1e-9
    gap, mono = target_scope_gap("theta(1-theta)", 6, 1.0, M=21)
    assert not mono and gap > 1e-3
    with pytest.raises(ValueError, match="target"):
        target_scope_gap("theta^3", 6, 1.0)


def test_largest_scope_gap():

    e_star, gap = largest_scope_gap("theta(1-theta)", 6, M=21, n_scan=7)
    assert gap > 1e-3
    for e in (e_star * 0.8, e_star * 1.25, 0.01, 10.0):
        assert target_scope_gap("theta(1-theta)", 6, e, M=21)[0] <= gap + 1e-9
    # a monotone target: no gap anywhere
    assert largest_scope_gap("theta^2", 6, M=21, n_scan=5)[1] < 1e-9
    with pytest.raises(ValueError, match="eps_range"):
        largest_scope_gap("theta", 6, eps_range=(1.0, 0.5))


def test_two_and_three_point_grids_identify_theta():
    """Issue 36, item 3: grids {0, 1} and {0, 1/2, 1} give (nearly) identical deficits at Fig. 4's eps.

    On such grids the count tells the grid points apart almost surely (theta = 0 gives y = 0, theta = 1 gives
    y = K, theta = 1/2 gives y near K/2), so UBaPP's Bayes risk is almost 0 on both and the deficit is minus
    LBaPP's MSE (continuous prior), whatever the grid. For {0, 1} the risk is exact: the remap reports the
    nearer end, and the risk is half the total weight of the noisy counts on the wrong side.
    """
    from dpbayes.ubapp.lbapp import lbapp_mse

    K, eps = 6, 0.7
    G = np.exp(truncated_geometric_logmatrix(K, eps))  # G[z, y]
    exact = 0.5 * np.sum(np.minimum(G[:, 0], G[:, K]))  # the remap errs with the smaller likelihood
    assert ubapp_exact(K, eps, np.array([0.0, 1.0])).risk == pytest.approx(exact, rel=1e-12)
    for e in (1.0, 3.0, 5.0):
        d2, d3 = grid_deficit(100, e, 2), grid_deficit(100, e, 3)
        assert d2 == pytest.approx(-lbapp_mse(100, e), abs=1e-12)
        assert abs(d3 - d2) < 1e-8
    # a four-point grid is no longer identified by the count: its risk is visible
    assert grid_deficit(100, 1.0, 4) - grid_deficit(100, 1.0, 2) > 1e-5


def test_add_remove_release_mse():
    """The add/remove release (ones and zeros counts with geometric noise, n private): exact sum against a
    direct Monte Carlo, and between the 2 eps lower bound and the prior variance."""
    from dpbayes.ubapp.certificates import off_grid_bound

    K, eps = 10, 1.0
    exact = add_remove_release_mse(K, eps, n_max=30)
    # Monte Carlo of the same estimator, built independently from the posterior over (ones, zeros)
    D = int(np.ceil(np.log(1e18) / eps))
    outs = np.arange(-D, 30 + D + 1)
    c = np.arange(31)
    g = np.exp(-eps * np.abs(outs[:, None] - c[None, :]))
    post_w = np.zeros((31, 31))
    post_m = np.zeros((31, 31))
    for ones in range(31):
        for zeros in range(31 - ones):
            post_w[ones, zeros] = 1.0 / (ones + zeros + 1)
            post_m[ones, zeros] = (ones + 1) / (ones + zeros + 2)
    est = (g @ (post_w * post_m) @ g.T) / (g @ post_w @ g.T)
    rng = np.random.default_rng(5)
    n = 200_000
    theta = rng.uniform(size=n)
    y = rng.binomial(K, theta)
    p = -np.expm1(-eps)
    a = y + rng.geometric(p, n) - rng.geometric(p, n)
    b = K - y + rng.geometric(p, n) - rng.geometric(p, n)
    err = (est[a + D, b + D] - theta) ** 2
    assert exact == pytest.approx(err.mean(), abs=4 * err.std() / np.sqrt(n))
    # add/remove eps-DP implies replace-one 2 eps-DP: never below the 2 eps optimum; below the prior variance
    assert off_grid_bound(K, 2 * eps, 2001).lower <= exact < 1 / 12
    with pytest.raises(ValueError, match="eps"):
        add_remove_release_mse(K, 0.01)
    with pytest.raises(ValueError, match="n_max"):
        add_remove_release_mse(K, 1.0, n_max=5)
