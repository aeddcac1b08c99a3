"""Tests of dpbayes.lbapp: the Laplace baseline, its exact MSE, Algorithm 2 and its privacy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from dpbayes.lbapp import (
    bayes_mse_posterior_mean,
    lbapp_estimate,
    lbapp_logpdf,
    lbapp_mse,
    lbapp_mse_mc,
    lbapp_scale,
)


@pytest.mark.parametrize("K", [1, 10, 100])
@pytest.mark.parametrize("eps", [1e-3, 0.5, 5.0])
def test_uniform_prior_closed_form(K, eps):
    assert np.isclose(lbapp_mse(K, eps), 1 / (6 * (K + 2)) + 2 / ((K + 2) * eps) ** 2, rtol=1e-14)


@pytest.mark.parametrize("K,a,b", [(1, 1.0, 1.0), (7, 1.0, 1.0), (7, 2.0, 5.0), (30, 0.5, 0.5)])
def test_bayes_mse_by_quadrature(K, a, b):
    """Independent check: integrate sum_y Binom(y | K, theta) (theta - posterior mean)^2 over the prior."""
    y = np.arange(K + 1)
    mean = (y + a) / (K + a + b)

    def integrand(t):
        return np.sum(stats.binom.pmf(y, K, t) * (t - mean) ** 2) * stats.beta.pdf(t, a, b)

    value, _ = integrate.quad(integrand, 0, 1, limit=200, points=[0.5])
    assert np.isclose(bayes_mse_posterior_mean(K, a, b), value, rtol=1e-7)


@pytest.mark.parametrize("K,eps,a,b", [(100, 0.001, 1, 1), (100, 1.0, 1, 1), (10, 5.0, 1, 1), (1, 0.01, 1, 1), (20, 0.3, 2, 5)])
def test_monte_carlo_agrees_with_exact(K, eps, a, b):
    rng = np.random.default_rng(1234)
    est = lbapp_mse_mc(K, eps, 20000, rng, a=a, b=b)
    assert abs(est.mean - lbapp_mse(K, eps, a, b)) <= 4 * est.stderr


def test_monte_carlo_detects_a_wrong_formula():
    """The 4-SE test has power: a formula missing the factor 2 of the Laplace variance fails it."""
    K, eps = 10, 0.5
    est = lbapp_mse_mc(K, eps, 20000, np.random.default_rng(7))
    wrong = bayes_mse_posterior_mean(K) + lbapp_scale(K, eps) ** 2
    assert abs(est.mean - wrong) > 4 * est.stderr


def test_monte_carlo_is_deterministic_given_seed():
    a = lbapp_mse_mc(5, 1.0, 1000, np.random.default_rng(3))
    b = lbapp_mse_mc(5, 1.0, 1000, np.random.default_rng(3))
    assert a == b


@pytest.mark.parametrize("K,eps", [(1, 0.1), (10, 1.0), (100, 5.0)])
def test_privacy_loss_is_eps(K, eps):
    """Exact privacy loss of the Laplace release between neighbouring counts y and y + 1."""
    scale = lbapp_scale(K, eps)
    t = np.linspace(-30 * scale, 1 + 30 * scale, 20001)
    y = np.arange(K)
    diff = np.abs(lbapp_logpdf(t[:, None], y[None, :], K, eps) - lbapp_logpdf(t[:, None], y[None, :] + 1, K, eps))
    assert diff.max() <= eps * (1 + 1e-12)
    assert np.isclose(diff.max(), eps, rtol=1e-9)


def test_estimate_centre_and_spread():
    rng = np.random.default_rng(0)
    y = np.full(200000, 3)
    est = lbapp_estimate(y, 8, 2.0, rng)
    assert abs(est.mean() - 0.4) < 5 * np.sqrt(2) * lbapp_scale(8, 2.0) / np.sqrt(y.size)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: lbapp_mse(0, 1.0), ValueError, "K"),
        (lambda: lbapp_mse(5, 0.0), ValueError, "eps"),
        (lambda: lbapp_mse(5, 1.0, a=-1.0), ValueError, "a"),
        (lambda: lbapp_mse_mc(5, 1.0, 1, np.random.default_rng(0)), ValueError, "n_runs"),
        (lambda: lbapp_mse_mc(5, 1.0, 100, 42), TypeError, "rng"),
        (lambda: lbapp_estimate(np.array([6]), 5, 1.0, np.random.default_rng(0)), ValueError, "y"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
