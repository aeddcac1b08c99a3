"""A sampler's cloud against the exact posterior of the same releases (dpbayes.smc.sampler_checks)."""

from __future__ import annotations

import numpy as np

from dpbayes.smc import mcmc, sampler_checks


def test_cloud_check_passes_exact_draws_and_catches_a_narrow_cloud():
    from dpbayes.smc import mcmc, samplers as smc

    x = 10.0 + 2.0 * np.random.default_rng(0).standard_normal(40)
    y, lo, hi = smc.fixed_interval_releases(x, (0.0, 20.0), 5.0, np.random.default_rng(1).laplace(size=40))
    q = mcmc.quadrature_posterior(y, lo, hi, 5.0)
    g = mcmc.grid_posterior(y, lo, hi, 5.0, np.linspace(q.mean_mu - 8 * q.sd_mu, q.mean_mu + 8 * q.sd_mu, 201),
                            np.exp(np.linspace(np.log(q.mean_sigma) - 2, np.log(q.mean_sigma) + 2, 201)))
    rng = np.random.default_rng(2)
    cells = rng.choice(g.prob.size, size=2000, p=g.prob.ravel())
    mu, sigma = g.mu_grid[cells // 201], g.sigma_grid[cells % 201]
    good = sampler_checks.cloud_vs_exact(mu, sigma, None, y, lo, hi, 5.0, np.random.default_rng(3), n_grid=201)
    assert good.edge_mass < 1e-4 and good.n_eff == 2000
    assert good.w1_mu < 3 * good.w1_ref_mu and good.w1_log_sigma < 3 * good.w1_ref_log_sigma
    assert abs(good.sd_ratio_mu - 1) < 0.1 and abs(good.sd_ratio_log_sigma - 1) < 0.1
    m0 = mu.mean()
    narrow = sampler_checks.cloud_vs_exact(m0 + 0.5 * (mu - m0), sigma, None, y, lo, hi, 5.0, np.random.default_rng(3), n_grid=201)
    assert abs(narrow.sd_ratio_mu - 0.5) < 0.06 and narrow.w1_mu > 5 * narrow.w1_ref_mu


def test_a_posterior_computed_by_the_caller_gives_the_same_check():
    rng = np.random.default_rng(7)
    x = 50 + 3 * rng.standard_normal(60)
    lo, hi = np.full(60, 40.0), np.full(60, 60.0)
    y = np.clip(x, lo, hi) + rng.laplace(scale=20 / 5.0, size=60)
    q = mcmc.quadrature_posterior(y, lo, hi, 5.0)
    mu, sigma = q.mean_mu + q.sd_mu * rng.standard_normal(300), q.mean_sigma * np.exp(0.1 * rng.standard_normal(300))
    own = sampler_checks.cloud_vs_exact(mu, sigma, None, y, lo, hi, 5.0, np.random.default_rng(3), n_grid=41)
    given = sampler_checks.cloud_vs_exact(mu, sigma, None, y, lo, hi, 5.0, np.random.default_rng(3), n_grid=41, posterior=q)
    assert given == own
    # and it is the one used: a posterior of other releases moves the grid, so the distances change
    other = mcmc.quadrature_posterior(y + 5.0, lo, hi, 5.0)
    moved = sampler_checks.cloud_vs_exact(mu, sigma, None, y, lo, hi, 5.0, np.random.default_rng(3), n_grid=41, posterior=other)
    assert moved.w1_mu != own.w1_mu
