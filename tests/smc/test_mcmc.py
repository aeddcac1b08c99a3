"""Batch exact-likelihood MCMC and the quadrature posterior."""

import numpy as np
import pytest

from dpbayes.smc import mcmc, samplers as smc

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


# --- quadrature_posterior: the self-placing grid -------------------------------------------------------


def test_quadrature_matches_a_fixed_fine_grid(releases):
    _, y, grid = releases
    q = mcmc.quadrature_posterior(y, *INTERVAL, EPS)
    assert q.edge_mass < 1e-5
    assert abs(q.mean_mu - grid.mean_mu) < 1e-3 * grid.sd_mu
    assert abs(q.mean_sigma - grid.mean_sigma) < 1e-3 * grid.sd_sigma
    assert abs(q.sd_mu - grid.sd_mu) < 1e-2 * grid.sd_mu
    assert abs(q.sd_sigma - grid.sd_sigma) < 1e-2 * grid.sd_sigma


def test_quadrature_follows_a_heavy_sigma_tail():
    # A narrow interval at eps = 1: the likelihood tends to a positive constant as sigma -> infinity (along a
    # cone mu - centre ~ sigma), so the posterior of sigma has a long prior-driven tail. A product grid that
    # stops at sigma = 20 misses much of the mean; the self-placing grid follows the tail, and refining it
    # (more points, smaller edge tolerance, wider start) moves the mean of sigma by about 1 % only.
    rng = np.random.default_rng(11)
    mu, sd, eps = 50.0, np.sqrt(10.0), 1.0
    x = mu + sd * rng.standard_normal(300)
    lo, hi = mu - sd, mu + sd
    y = np.clip(x, lo, hi) + (hi - lo) * rng.laplace(size=x.size) / eps
    q = mcmc.quadrature_posterior(y, lo, hi, eps, n_grid=17)
    fine = mcmc.quadrature_posterior(y, lo, hi, eps, n_grid=25, edge_tol=1e-7, half_width=8.0)
    assert fine.edge_mass < 1e-7
    assert abs(q.mean_sigma - fine.mean_sigma) < 0.02 * fine.mean_sigma
    assert abs(q.mean_mu - fine.mean_mu) < 0.05 * fine.sd_mu
    short = mcmc.grid_posterior(y, lo, hi, eps, np.linspace(fine.mean_mu - 6 * fine.sd_mu, fine.mean_mu + 6 * fine.sd_mu, 121),
                                np.geomspace(0.05, 20.0, 200))
    assert fine.mean_sigma > 1.5 * short.mean_sigma  # the tail beyond sigma = 20 carries much of the mean


def test_quadrature_n_grid_17_is_close_to_25():
    rng = np.random.default_rng(2)
    x = 50.0 + np.sqrt(10.0) * rng.standard_normal(300)
    lo, hi = 50.0 - 0.12 * np.sqrt(10.0), 50.0 + 0.12 * np.sqrt(10.0)
    y = np.clip(x, lo, hi) + (hi - lo) * rng.laplace(size=x.size) / 2.0
    a = mcmc.quadrature_posterior(y, lo, hi, 2.0)
    b = mcmc.quadrature_posterior(y, lo, hi, 2.0, n_grid=17)
    assert abs(a.mean_mu - b.mean_mu) < 0.02 * a.sd_mu
    assert abs(a.mean_sigma - b.mean_sigma) < 0.01 * a.mean_sigma


def test_quadrature_agrees_with_the_samplers_on_fixed_and_adaptive_releases():
    # fixed interval: exact-likelihood MCMC; adaptive intervals: the exact-likelihood SMC that chose them
    rng = np.random.default_rng(4)
    for rep in range(2):
        x = 50.0 + np.sqrt(10.0) * rng.standard_normal(150)
        noise = rng.laplace(size=x.size)
        y, lo, hi = smc.fixed_interval_releases(x, (35.0, 65.0), 2.0, noise)
        q = mcmc.quadrature_posterior(y, lo, hi, 2.0)
        chain = mcmc.rwm_exact(y, lo, hi, 2.0, np.random.default_rng(10 + rep), n_iter=6000, burn_in=1000)
        assert abs(chain.mean_mu - q.mean_mu) < 0.2 * q.sd_mu
        assert abs(chain.mean_sigma - q.mean_sigma) < 0.2 * q.sd_sigma
        res = smc.smc_exact(x, 2.0, np.random.default_rng(20 + rep), n_particles=1000, ab=(-0.5, 0.5), noise=noise,
                            store_every=x.size)
        qa = mcmc.quadrature_posterior(res.y, res.lower, res.upper, 2.0)
        assert abs(res.mean_mu[-1] - qa.mean_mu) < 0.2 * qa.sd_mu
        assert abs(res.mean_sigma[-1] - qa.mean_sigma) < 0.2 * qa.sd_sigma


def test_quadrature_rejects_bad_input(releases):
    _, y, _ = releases
    with pytest.raises(ValueError, match="n_grid"):
        mcmc.quadrature_posterior(y, *INTERVAL, EPS, n_grid=3)
    with pytest.raises(ValueError, match="half_width"):
        mcmc.quadrature_posterior(y, *INTERVAL, EPS, half_width=0.0)
    with pytest.raises(ValueError, match="edge_tol"):
        mcmc.quadrature_posterior(y, *INTERVAL, EPS, edge_tol=1.5)
    with pytest.raises(ValueError, match="lower and upper"):
        mcmc.quadrature_posterior(y, 60.0, 40.0, EPS)
