"""Batch exact-likelihood MCMC and the quadrature posterior."""

import numpy as np
import pytest

from dpbayes import mcmc, smc

EPS = 5.0
INTERVAL = (40.0, 60.0)


@pytest.fixture(scope="module")
def releases():
    rng = np.random.default_rng(3)
    x = 50.0 + np.sqrt(10.0) * rng.standard_normal(30)
    y = np.clip(x, *INTERVAL) + (INTERVAL[1] - INTERVAL[0]) * rng.laplace(size=x.size) / EPS
    grid = mcmc.grid_posterior(y, *INTERVAL, EPS, np.linspace(40, 62, 221), np.linspace(0.05, 12, 240))
    return x, y, grid


def test_grid_covers_the_posterior(releases):
    _, _, grid = releases
    edges = grid.prob[0].sum() + grid.prob[-1].sum() + grid.prob[:, 0].sum() + grid.prob[:, -1].sum()
    assert edges < 1e-6
    assert np.isclose(grid.prob.sum(), 1.0)


def test_grid_posterior_without_noise_is_the_normal_posterior():
    # eps huge and a wide interval: y = x, and the posterior mean of mu is close to the sample mean.
    rng = np.random.default_rng(1)
    x = 50.0 + 3.0 * rng.standard_normal(200)
    g = mcmc.grid_posterior(x, 0.0, 100.0, 1e7, np.linspace(48, 52, 161), np.linspace(2.0, 4.5, 126))
    assert abs(g.mean_mu - x.mean()) < 0.02 * g.sd_mu + 1e-3
    assert abs(g.sd_mu - x.std() / np.sqrt(x.size)) < 0.05 * g.sd_mu
    assert abs(g.mean_sigma - x.std()) < 0.1 * g.sd_sigma + 0.02


def test_rwm_matches_quadrature(releases):
    _, y, grid = releases
    means = np.array(
        [
            [(r := mcmc.rwm_exact(y, *INTERVAL, EPS, np.random.default_rng(s), n_iter=5000, burn_in=1000)).mean_mu, r.mean_sigma]
            for s in range(4)
        ]
    )
    mean, se = means.mean(axis=0), means.std(axis=0, ddof=1) / 2.0
    target = np.array([grid.mean_mu, grid.mean_sigma])
    sd = np.array([grid.sd_mu, grid.sd_sigma])
    assert np.all(np.abs(mean - target) < np.maximum(4 * se, 0.05 * sd)), (mean, se, target)
    assert np.all(np.abs(mean - target) < 0.1 * sd)


def test_log_posterior_agrees_with_grid(releases):
    _, y, grid = releases
    # Ratio of posterior densities in (mu, sigma) at two grid points equals the grid's ratio.
    i, j = (100, 30), (120, 60)
    lp = mcmc.log_posterior(grid.mu_grid[[i[0], j[0]]], np.log(grid.sigma_grid[[i[1], j[1]]]), y, *INTERVAL, EPS)
    lp -= np.log(grid.sigma_grid[[i[1], j[1]]])  # density in sigma, not log sigma
    assert np.isclose(lp[0] - lp[1], np.log(grid.prob[i] / grid.prob[j]), atol=1e-8)


def test_bad_input_is_rejected(releases):
    _, y, _ = releases
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="lower and upper"):
        mcmc.rwm_exact(y, 60.0, 40.0, EPS, rng)
    with pytest.raises(ValueError, match="burn_in must be an integer"):
        mcmc.rwm_exact(y, *INTERVAL, EPS, rng, n_iter=10, burn_in=10)
    with pytest.raises(ValueError, match="eps must be > 0"):
        mcmc.grid_posterior(y, *INTERVAL, -1.0, [1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="sigma_grid must"):
        mcmc.grid_posterior(y, *INTERVAL, EPS, [1.0, 2.0], [0.0, 2.0])
    with pytest.raises(ValueError, match="y must be a non-empty"):
        mcmc.rwm_exact([], *INTERVAL, EPS, rng)
    assert isinstance(smc.NormalInvGammaPrior().mu_var, float)
