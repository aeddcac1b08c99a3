"""Tests of dpbayes.choosing.fixed_theta: chapter 1's estimators at a fixed theta, by chapter 5's registry."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from dpbayes.choosing.candidates import bayes_risk, candidate_moments
from dpbayes.choosing.fixed_theta import (
    ESTIMATORS,
    crossing_thetas,
    risk_function,
    theta_risk_curve,
    ubapp_grid_theta_risk,
    worst_case,
)
from dpbayes.ubapp.lbapp import bayes_mse_posterior_mean, clipped_lbapp_mse, laplace_count_remap_mse, lbapp_scale
from dpbayes.choosing.sample_complexity import ubapp_continuous_mse
from dpbayes.ubapp.optimal import truncated_geometric_logmatrix, ubapp_exact


CHAPTER1_MSE = {
    "ubapp": lambda K, e, a, b: ubapp_continuous_mse(K, e, a, b),
    "lbapp-clipped": clipped_lbapp_mse,
    "laplace-remap": laplace_count_remap_mse,
    "no-privacy": lambda K, e, a, b: bayes_mse_posterior_mean(K, a, b),
}


@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("K,eps,a,b", [(100, 0.1, 1, 1), (100, 1.0, 1, 1), (7, 0.5, 2, 5), (40, 3.0, 0.5, 0.5)])
def test_registry_candidates_are_chapter1_estimators(name, K, eps, a, b):
    """Chapter 5's candidates have chapter 1's exact Bayes MSEs (lbapp / ubapp / sample_complexity)."""
    bias, msd = candidate_moments(ESTIMATORS[name], K, eps, prior=(a, b), estimand="theta")
    assert bayes_risk(bias, msd, prior=(a, b), estimand="theta") == pytest.approx(CHAPTER1_MSE[name](K, eps, a, b), rel=1e-9)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_prior_average_of_the_curve_is_the_bayes_risk(name):
    K, eps = 30, 0.7
    f = risk_function(name, K, eps)
    avg, _ = integrate.quad(lambda t: float(f(np.array([t]))[0]), 0.0, 1.0, limit=200, epsabs=1e-13)
    assert avg == pytest.approx(CHAPTER1_MSE[name](K, eps, 1.0, 1.0), rel=1e-8)


def test_ubapp_curve_by_direct_sum():
    """The continuous-limit UBaPP at fixed theta: geometric matrix and the exact solver's remap, summed directly."""
    K, eps = 20, 0.3
    sol = ubapp_exact(K, eps)
    G = np.exp(truncated_geometric_logmatrix(K, eps))
    th = np.array([0.0, 0.05, 0.37, 0.5, 1.0])
    W = stats.binom.pmf(np.arange(K + 1)[None, :], K, th[:, None])
    direct = np.einsum("ny,zy,zn->n", W, G, (sol.estimates[:, None] - th[None, :]) ** 2)
    np.testing.assert_allclose(theta_risk_curve("ubapp", K, eps, th), direct, rtol=1e-10)


def test_clipped_lbapp_curve_by_monte_carlo():
    K, eps, theta = 10, 0.4, 0.1
    rng = np.random.default_rng(3)
    n = 400_000
    y = rng.binomial(K, theta, n)
    est = np.clip((y + 1) / (K + 2) + rng.laplace(0.0, lbapp_scale(K, eps), n), 0.0, 1.0)
    err = (est - theta) ** 2
    assert float(theta_risk_curve("lbapp-clipped", K, eps, theta)) == pytest.approx(err.mean(), abs=5 * err.std() / np.sqrt(n))


def test_grid_ubapp_tends_to_continuous_limit_and_averages_to_its_risk():
    K, eps = 15, 0.5
    grid = np.linspace(0.0, 1.0, 4001)
    th = np.linspace(0.0, 1.0, 7)
    np.testing.assert_allclose(ubapp_grid_theta_risk(K, eps, grid, th), theta_risk_curve("ubapp", K, eps, th), rtol=1e-3)
    small = np.linspace(0.0, 1.0, 11)
    avg = float(np.mean(ubapp_grid_theta_risk(K, eps, small, small)))
    assert avg == pytest.approx(ubapp_exact(K, eps, small).risk, rel=1e-12)


def test_crossings_and_worst_case():
    f = lambda t: np.asarray(t) ** 2  # noqa: E731
    g = lambda t: 0.25 + 0.0 * np.asarray(t)  # noqa: E731
    np.testing.assert_allclose(crossing_thetas(f, g), [0.5], atol=1e-10)
    assert crossing_thetas(f, lambda t: np.asarray(t) ** 2 + 1.0).size == 0
    t, v = worst_case(lambda t: -(np.asarray(t) - 0.3123) ** 2)
    assert t == pytest.approx(0.3123, abs=1e-6) and v == pytest.approx(0.0, abs=1e-12)
    # the non-private posterior mean: R = (K t (1 - t) + (1 - 2t)^2)/(K + 2)^2, largest at 1/2 for K > 4
    t, v = worst_case("no-privacy", 100, 1.0)
    assert t == pytest.approx(0.5, abs=1e-6) and v == pytest.approx(25 / 102**2, rel=1e-10)


def test_ubapp_loses_to_clipped_lbapp_near_the_edges_at_eps_one():
    """The finding of 01e: UBaPP's pull to 1/2 costs it at theta near 0; it wins at 1/2."""
    f, g = risk_function("ubapp", 100, 1.0), risk_function("lbapp-clipped", 100, 1.0)
    assert f(np.array([0.0]))[0] > g(np.array([0.0]))[0]
    assert f(np.array([0.5]))[0] < g(np.array([0.5]))[0]
    roots = crossing_thetas(f, g)
    assert roots.size == 2 and roots[0] == pytest.approx(1.0 - roots[1], abs=1e-9)


@pytest.mark.parametrize("bad", [dict(estimator="lbapp"), dict(K=0), dict(eps=0.0), dict(beta_prior=(0.0, 1.0))])
def test_validation(bad):
    kw = dict(estimator="ubapp", K=10, eps=1.0, beta_prior=(1.0, 1.0)) | bad
    with pytest.raises(ValueError):
        risk_function(**kw)
    with pytest.raises(ValueError, match="interval"):
        crossing_thetas(np.square, np.square, interval=(0.5, 0.2))
