"""Tests of dpbayes.ubapp.lbapp: the Laplace baseline, its exact MSE, Algorithm 2 and its privacy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from dpbayes.ubapp.lbapp import (
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


# --------------------------------------------------------------------------------------------
# Fairer baselines: clipped LBaPP, the prior mean, Laplace-on-the-count + Bayes remap
# --------------------------------------------------------------------------------------------
from dpbayes.ubapp.lbapp import (  # noqa: E402
    clipped_lbapp_estimate,
    clipped_lbapp_mse,
    laplace_count_remap_mse,
    lbapp_grid_mae,
    prior_variance,
)


def test_prior_variance():
    assert prior_variance() == pytest.approx(1 / 12, rel=1e-15)
    assert prior_variance(2.0, 5.0) == pytest.approx(10 / (49 * 8), rel=1e-15)


@pytest.mark.parametrize("K,eps,a,b", [(1, 0.5, 1, 1), (10, 0.05, 1, 1), (100, 0.001, 1, 1), (100, 1.0, 1, 1), (20, 0.3, 2, 5)])
def test_clipped_lbapp_mse_by_quadrature(K, eps, a, b):
    """Independent check: integrate (clip(m + z) - m)^2 against the Laplace density numerically."""
    y = np.arange(K + 1)
    p_y = stats.betabinom.pmf(y, K, a, b)
    m = (y + a) / (K + a + b)
    s = lbapp_scale(K, eps, a, b)
    noise = []
    for mi in m:
        f = lambda z: (np.clip(mi + z, 0.0, 1.0) - mi) ** 2 * stats.laplace.pdf(z, scale=s)  # noqa: E731
        inner, _ = integrate.quad(f, -mi, 1 - mi, limit=200, epsabs=0, epsrel=1e-12)
        tails = mi**2 * 0.5 * np.exp(-mi / s) + (1 - mi) ** 2 * 0.5 * np.exp(-(1 - mi) / s)
        noise.append(inner + tails)
    expected = bayes_mse_posterior_mean(K, a, b) + p_y @ np.array(noise)
    assert clipped_lbapp_mse(K, eps, a, b) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("K,eps", [(10, 0.05), (100, 1.0)])
def test_clipped_lbapp_mse_by_monte_carlo(K, eps):
    rng = np.random.default_rng(11)
    theta = rng.uniform(size=200_000)
    y = rng.binomial(K, theta)
    err2 = (clipped_lbapp_estimate(y, K, eps, rng) - theta) ** 2
    se = err2.std(ddof=1) / np.sqrt(err2.size)
    assert abs(err2.mean() - clipped_lbapp_mse(K, eps)) <= 4 * se
    # and the test has power: the unclipped formula is far outside at eps = 0.05
    if eps < 0.1:
        assert abs(err2.mean() - lbapp_mse(K, eps)) > 4 * se


@pytest.mark.parametrize("K,eps", [(1, 0.1), (10, 1.0), (100, 5.0)])
def test_clipped_lbapp_between_limits(K, eps):
    assert clipped_lbapp_mse(K, eps) <= lbapp_mse(K, eps)
    assert clipped_lbapp_mse(K, 1e-9) < 1 / 3 + bayes_mse_posterior_mean(K)
    assert clipped_lbapp_mse(K, 1e9) == pytest.approx(lbapp_mse(K, 1e9), rel=1e-12)


@pytest.mark.parametrize("K,eps,a,b", [(1, 0.5, 1, 1), (10, 0.05, 1, 1), (30, 2.0, 1, 1), (20, 0.3, 2, 5)])
def test_laplace_count_remap_quadrature_converged(K, eps, a, b):
    assert laplace_count_remap_mse(K, eps, a, b) == pytest.approx(laplace_count_remap_mse(K, eps, a, b, n_nodes=96), rel=1e-12)


@pytest.mark.parametrize("K,eps", [(5, 0.3), (20, 1.0)])
def test_laplace_count_remap_by_monte_carlo(K, eps):
    """Simulate the mechanism and remap with the exact posterior mean given v (computed independently)."""
    rng = np.random.default_rng(5)
    n = 200_000
    theta = rng.uniform(size=n)
    y = rng.binomial(K, theta)
    v = np.clip(y + rng.laplace(0.0, 1 / eps, size=n), 0.0, K)
    ys = np.arange(K + 1)
    m = (ys + 1) / (K + 2)
    dens = np.where(
        (v == 0)[:, None], 0.5 * np.exp(-eps * ys)[None, :],
        np.where((v == K)[:, None], 0.5 * np.exp(-eps * (K - ys))[None, :], np.exp(-eps * np.abs(v[:, None] - ys[None, :]))),
    )
    est = dens @ m / dens.sum(axis=1)
    err2 = (est - theta) ** 2
    se = err2.std(ddof=1) / np.sqrt(n)
    assert abs(err2.mean() - laplace_count_remap_mse(K, eps)) <= 4 * se


@pytest.mark.parametrize("K,eps", [(1, 0.1), (10, 1.0), (100, 0.01), (100, 1.0)])
def test_remap_beats_lbapp_and_prior_mean_limits(K, eps):
    """The Bayes remap is the best function of v, so it beats the prior mean (a constant); clipped LBaPP
    is not a function of v (it sees y + Z below 0 or above K), so beating it is checked, not implied.
    Both limits in eps: the prior variance and the non-private Bayes MSE."""
    r = laplace_count_remap_mse(K, eps)
    assert r <= clipped_lbapp_mse(K, eps) + 1e-15
    assert r <= prior_variance() + 1e-15
    assert laplace_count_remap_mse(K, 1e-7) == pytest.approx(prior_variance(), rel=1e-5)
    assert laplace_count_remap_mse(K, 200.0) == pytest.approx(bayes_mse_posterior_mean(K), rel=1e-9)


def test_lbapp_grid_mae_by_monte_carlo():
    K, eps = 20, 0.5
    grid = np.linspace(0, 1, 201)
    rng = np.random.default_rng(9)
    n = 200_000
    theta = rng.choice(grid, size=n)
    y = rng.binomial(K, theta)
    err = np.abs(lbapp_estimate(y, K, eps, rng) - theta)
    se = err.std(ddof=1) / np.sqrt(n)
    assert abs(err.mean() - lbapp_grid_mae(K, eps, grid)) <= 4 * se


def test_baseline_bad_input():
    with pytest.raises(ValueError, match="eps"):
        clipped_lbapp_mse(10, 0.0)
    with pytest.raises(ValueError, match="K"):
        laplace_count_remap_mse(0, 1.0)
    with pytest.raises(ValueError, match="n_nodes"):
        laplace_count_remap_mse(10, 1.0, n_nodes=1)
    with pytest.raises(ValueError, match="theta_grid"):
        lbapp_grid_mae(10, 1.0, np.array([0.5, 0.2]))


@pytest.mark.parametrize("K,eps", [(5, 0.3), (20, 1.0), (20, 5.0)])
def test_laplace_count_median_mae_converged_and_above_the_optimum(K, eps):
    from dpbayes.ubapp.lbapp import laplace_count_median_mae
    from dpbayes.ubapp.optimal import ubapp_exact

    theta = np.linspace(0.0, 1.0, 41)
    mae = laplace_count_median_mae(K, eps, theta)
    assert np.isclose(mae, laplace_count_median_mae(K, eps, theta, n_nodes=192), rtol=1e-6)
    # its outputs lie on the grid and it is eps-DP, so the LP optimum (the exact solver, absolute loss) bounds it
    assert mae >= ubapp_exact(K, eps, theta, loss="absolute").risk * (1 - 1e-12)


def test_laplace_count_median_mae_by_monte_carlo():
    from dpbayes.ubapp.lbapp import laplace_count_median_mae

    K, eps, theta = 8, 0.7, np.linspace(0.0, 1.0, 21)
    rng = np.random.default_rng(3)
    n = 40_000
    j = rng.integers(0, theta.size, n)
    y = rng.binomial(K, theta[j])
    v = np.clip(y + rng.laplace(0.0, 1.0 / eps, n), 0.0, K)
    ys = np.arange(K + 1)
    joint = stats.binom.pmf(ys[:, None], K, theta[None, :]) / theta.size
    lik = np.where(v[:, None] == 0, 0.5 * np.exp(-eps * ys[None, :]),
                   np.where(v[:, None] == K, 0.5 * np.exp(-eps * (K - ys[None, :])),
                            0.5 * eps * np.exp(-eps * np.abs(v[:, None] - ys[None, :]))))
    post = lik @ joint
    c = np.cumsum(post, axis=1)
    med = theta[np.argmax(c >= 0.5 * c[:, -1:], axis=1)]
    err = np.abs(theta[j] - med)
    assert abs(err.mean() - laplace_count_median_mae(K, eps, theta)) < 4 * err.std() / np.sqrt(n)
